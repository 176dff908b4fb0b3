// CPU backend of NMS. Same decisions as the CUDA backend by construction: the pair math is nms_math.hpp,
// and greedy NMS is "keep a box iff no kept, higher-ranked box of its group overlaps it past the
// threshold" evaluated in rank order. Groups run in parallel (OpenMP); a large group uses a uniform grid
// of the kept boxes so that each box is tested only against kept boxes near it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "nms_backend.hpp"
#include "nms_math.hpp"

namespace s3d::detection::detail {
namespace {

/// One box in rank order within its group, with the data every path needs.
struct Prepared {
  std::vector<AxisBox> axis;  // by input index (axis-aligned mode)
  std::vector<RotBox> rot;    // by input index (rotated mode)
  // pruning bounds by input index
  std::vector<float> bx1, by1, bx2, by2;
  std::vector<std::uint8_t> can_overlap;  // 0: never intersects anything (inter = 0 always)
};

float pair_iou(const Prepared& p, const NmsParams& params, std::int64_t a, std::int64_t b) {
  if (params.rotated) return rot_iou(p.rot[a], p.rot[b]);
  return axis_iou(p.axis[a], p.axis[b], params.pixel_offset);
}

/// Hard NMS of one group, `order` = input indices in rank order; appends kept ones to `kept` (rank order).
void hard_group(const Prepared& p, const NmsParams& params, const std::int64_t* order, std::int64_t n,
                std::vector<std::int64_t>& kept) {
  const float thr = params.iou_threshold;
  const bool ge = params.suppress_at_equal;
  if (n <= 512) {
    // torchvision's loop: the kept box suppresses every later live box it overlaps.
    std::vector<std::uint8_t> suppressed(static_cast<std::size_t>(n), 0);
    for (std::int64_t i = 0; i < n; ++i) {
      if (suppressed[i]) continue;
      const std::int64_t a = order[i];
      kept.push_back(a);
      if (!p.can_overlap[a]) continue;
      for (std::int64_t j = i + 1; j < n; ++j) {
        if (suppressed[j]) continue;
        const std::int64_t b = order[j];
        if (!p.can_overlap[b]) continue;
        if (iou_passes(pair_iou(p, params, a, b), thr, ge)) suppressed[j] = 1;
      }
    }
    return;
  }
  // Grid of kept boxes. A pair can intersect only if their bounds (expanded by the margin) overlap, and
  // then they share a cell (cell index is monotone in the coordinate).
  float minx = INFINITY, miny = INFINITY, maxx = -INFINITY, maxy = -INFINITY, mag = 0.f;
  std::vector<float> sides;
  sides.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t a = order[i];
    if (!p.can_overlap[a]) continue;
    minx = std::min(minx, p.bx1[a]);
    miny = std::min(miny, p.by1[a]);
    maxx = std::max(maxx, p.bx2[a]);
    maxy = std::max(maxy, p.by2[a]);
    sides.push_back(std::max(p.bx2[a] - p.bx1[a], p.by2[a] - p.by1[a]));
  }
  if (sides.empty()) {
    kept.insert(kept.end(), order, order + n);
    return;
  }
  mag = std::max(std::max(std::fabs(minx), std::fabs(maxx)), std::max(std::fabs(miny), std::fabs(maxy)));
  const float margin = prune_margin(params.pixel_offset, mag);
  std::nth_element(sides.begin(), sides.begin() + sides.size() / 2, sides.end());
  const double ext_x = static_cast<double>(maxx) - minx + 2.0 * margin;
  const double ext_y = static_cast<double>(maxy) - miny + 2.0 * margin;
  double cell = std::max<double>(sides[sides.size() / 2], 1e-6);
  const double max_cells_per_axis = 2048.0;
  cell = std::max({cell, ext_x / max_cells_per_axis, ext_y / max_cells_per_axis});
  const int gx = std::max(1, static_cast<int>(std::ceil(ext_x / cell)));
  const int gy = std::max(1, static_cast<int>(std::ceil(ext_y / cell)));
  const double ox = static_cast<double>(minx) - margin;
  const double oy = static_cast<double>(miny) - margin;
  auto cell_x = [&](double x) { return std::clamp(static_cast<int>(std::floor((x - ox) / cell)), 0, gx - 1); };
  auto cell_y = [&](double y) { return std::clamp(static_cast<int>(std::floor((y - oy) / cell)), 0, gy - 1); };
  std::vector<std::vector<std::int64_t>> cells(static_cast<std::size_t>(gx) * gy);
  std::vector<std::int64_t> big;  // kept boxes covering too many cells: tested against every box
  const int kBigCells = 64;

  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t b = order[i];
    if (!p.can_overlap[b]) {
      kept.push_back(b);
      continue;
    }
    const int qx0 = cell_x(p.bx1[b]), qx1 = cell_x(p.bx2[b]);
    const int qy0 = cell_y(p.by1[b]), qy1 = cell_y(p.by2[b]);
    bool suppressed = false;
    for (std::int64_t a : big) {
      if (iou_passes(pair_iou(p, params, a, b), params.iou_threshold, params.suppress_at_equal)) {
        suppressed = true;
        break;
      }
    }
    for (int cy = qy0; cy <= qy1 && !suppressed; ++cy) {
      for (int cx = qx0; cx <= qx1 && !suppressed; ++cx) {
        for (std::int64_t a : cells[static_cast<std::size_t>(cy) * gx + cx]) {
          if (iou_passes(pair_iou(p, params, a, b), params.iou_threshold, params.suppress_at_equal)) {
            suppressed = true;
            break;
          }
        }
      }
    }
    if (suppressed) continue;
    kept.push_back(b);
    const int kx0 = cell_x(p.bx1[b] - margin), kx1 = cell_x(p.bx2[b] + margin);
    const int ky0 = cell_y(p.by1[b] - margin), ky1 = cell_y(p.by2[b] + margin);
    if (static_cast<std::int64_t>(kx1 - kx0 + 1) * (ky1 - ky0 + 1) > kBigCells) {
      big.push_back(b);
      continue;
    }
    for (int cy = ky0; cy <= ky1; ++cy)
      for (int cx = kx0; cx <= kx1; ++cx) cells[static_cast<std::size_t>(cy) * gx + cx].push_back(b);
  }
}

/// Soft-NMS of one group (mmcv soft_nms, deterministic ties): repeatedly select the live box with the
/// highest current score (ties -> lower input index), then decay every other live box by the weight of its
/// IoU with the selected one; boxes whose score is (or falls) below soft_min_score are dropped.
void soft_group(const Prepared& p, const NmsParams& params, const float* scores, const std::int64_t* order,
                std::int64_t n, std::vector<std::int64_t>& kept, std::vector<float>& kept_scores) {
  const int method = params.method == NmsMethod::kSoftLinear ? 1 : 2;
  std::vector<std::int64_t> live;
  std::vector<float> cur;
  live.reserve(static_cast<std::size_t>(n));
  cur.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const float s = scores[order[i]];
    if (s < params.soft_min_score) continue;
    live.push_back(order[i]);
    cur.push_back(s);
  }
  float mag = 0.f;
  for (std::int64_t b : live)
    mag = std::max({mag, std::fabs(p.bx1[b]), std::fabs(p.by1[b]), std::fabs(p.bx2[b]), std::fabs(p.by2[b])});
  const float margin = prune_margin(params.pixel_offset, mag);
  while (!live.empty()) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < live.size(); ++k) {
      if (cur[k] > cur[best] || (cur[k] == cur[best] && live[k] < live[best])) best = k;
    }
    const std::int64_t a = live[best];
    kept.push_back(a);
    kept_scores.push_back(cur[best]);
    live[best] = live.back();
    cur[best] = cur.back();
    live.pop_back();
    cur.pop_back();
    std::size_t w = 0;
    for (std::size_t k = 0; k < live.size(); ++k) {
      const std::int64_t b = live[k];
      float s = cur[k];
      // Bounds farther apart than the margin: inter = 0, weight exactly 1 (skipping is exact).
      if (p.can_overlap[a] && p.can_overlap[b] && p.bx2[a] + margin >= p.bx1[b] && p.bx2[b] + margin >= p.bx1[a] &&
          p.by2[a] + margin >= p.by1[b] && p.by2[b] + margin >= p.by1[a]) {
        const float iou = pair_iou(p, params, a, b);
        s = s * soft_weight(iou, method, params.iou_threshold, params.suppress_at_equal, params.sigma);
      }
      if (s < params.soft_min_score) continue;
      live[w] = b;
      cur[w] = s;
      ++w;
    }
    live.resize(w);
    cur.resize(w);
  }
}

}  // namespace

NmsResult nms_cpu(const NmsInput& in, const NmsParams& params) {
  NmsResult result;
  const std::int64_t n_all = in.count;
  if (n_all == 0) return result;
  const int dim = params.box_dim();

  // 1. min_score pre-filter (NaN never passes), then the global rank: score descending, index ascending.
  std::vector<std::int64_t> idx;
  idx.reserve(static_cast<std::size_t>(n_all));
  for (std::int64_t i = 0; i < n_all; ++i)
    if (in.scores[i] >= params.min_score) idx.push_back(i);
  const std::int64_t n = static_cast<std::int64_t>(idx.size());
  std::vector<std::uint32_t> key(static_cast<std::size_t>(n_all), 0u);
  for (std::int64_t i : idx) {
    std::uint32_t bits;
    std::memcpy(&bits, &in.scores[i], 4);
    key[i] = descending_score_key(in.scores[i], bits);
  }
  std::sort(idx.begin(), idx.end(),
            [&](std::int64_t a, std::int64_t b) { return key[a] != key[b] ? key[a] < key[b] : a < b; });

  // 2. Groups: stable by group id over the ranked list -> each group's boxes in rank order.
  std::vector<std::int64_t> grouped(idx);
  if (in.group_ids) {
    std::stable_sort(grouped.begin(), grouped.end(),
                     [&](std::int64_t a, std::int64_t b) { return in.group_ids[a] < in.group_ids[b]; });
  }
  std::vector<std::int64_t> seg_begin;
  for (std::int64_t k = 0; k < n; ++k) {
    if (k == 0 || (in.group_ids && in.group_ids[grouped[k]] != in.group_ids[grouped[k - 1]])) seg_begin.push_back(k);
  }
  seg_begin.push_back(n);
  const std::int64_t n_groups = static_cast<std::int64_t>(seg_begin.size()) - 1;

  // 3. Per-box prepared geometry.
  Prepared p;
  p.can_overlap.assign(static_cast<std::size_t>(n_all), 0);
  if (params.rotated) {
    p.rot.resize(static_cast<std::size_t>(n_all));
  } else {
    p.axis.resize(static_cast<std::size_t>(n_all));
  }
  p.bx1.resize(static_cast<std::size_t>(n_all));
  p.by1.resize(static_cast<std::size_t>(n_all));
  p.bx2.resize(static_cast<std::size_t>(n_all));
  p.by2.resize(static_cast<std::size_t>(n_all));
#pragma omp parallel for schedule(static) if (n > 50000)
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t i = idx[k];
    const float* b = in.boxes + i * dim;
    if (params.rotated) {
      p.rot[i] = make_rot_box(b);
      p.bx1[i] = p.rot[i].xmin;
      p.by1[i] = p.rot[i].ymin;
      p.bx2[i] = p.rot[i].xmax;
      p.by2[i] = p.rot[i].ymax;
      p.can_overlap[i] = static_cast<std::uint8_t>(p.rot[i].valid);
    } else {
      p.axis[i] = make_axis_box(b, params.pixel_offset);
      p.bx1[i] = b[0];
      p.by1[i] = b[1];
      p.bx2[i] = b[2];
      p.by2[i] = b[3];
      p.can_overlap[i] = params.pixel_offset != 0 || (b[2] > b[0] && b[3] > b[1]);
    }
  }

  // 4. NMS per group, in parallel; pre_top_k truncates each group's ranked list.
  const bool soft = params.method != NmsMethod::kHard;
  std::vector<std::vector<std::int64_t>> kept(static_cast<std::size_t>(n_groups));
  std::vector<std::vector<float>> kept_scores(soft ? static_cast<std::size_t>(n_groups) : 0);
  // Threads only pay off with several groups and enough work (a parallel region costs tens of microseconds).
#pragma omp parallel for schedule(dynamic, 1) if (n_groups > 1 && n > 4096)
  for (std::int64_t g = 0; g < n_groups; ++g) {
    std::int64_t len = seg_begin[g + 1] - seg_begin[g];
    if (params.pre_top_k > 0) len = std::min(len, params.pre_top_k);
    const std::int64_t* order = grouped.data() + seg_begin[g];
    if (soft) {
      soft_group(p, params, in.scores, order, len, kept[g], kept_scores[g]);
    } else {
      hard_group(p, params, order, len, kept[g]);
    }
  }

  // 5. Global output order: final score descending, ties -> lower input index.
  std::vector<std::int64_t> out;
  std::vector<float> out_scores;
  if (!soft) {
    std::vector<std::uint8_t> flag(static_cast<std::size_t>(n_all), 0);
    for (const auto& v : kept)
      for (std::int64_t i : v) flag[i] = 1;
    for (std::int64_t i : idx)
      if (flag[i]) {
        out.push_back(i);
        out_scores.push_back(in.scores[i]);
      }
  } else {
    std::vector<float> final_score(static_cast<std::size_t>(n_all), 0.f);
    for (std::size_t g = 0; g < kept.size(); ++g)
      for (std::size_t k = 0; k < kept[g].size(); ++k) {
        out.push_back(kept[g][k]);
        final_score[kept[g][k]] = kept_scores[g][k];
      }
    std::vector<std::uint32_t> fkey(static_cast<std::size_t>(n_all), 0u);
    for (std::int64_t i : out) {
      std::uint32_t bits;
      std::memcpy(&bits, &final_score[i], 4);
      fkey[i] = descending_score_key(final_score[i], bits);
    }
    std::sort(out.begin(), out.end(),
              [&](std::int64_t a, std::int64_t b) { return fkey[a] != fkey[b] ? fkey[a] < fkey[b] : a < b; });
    out_scores.reserve(out.size());
    for (std::int64_t i : out) out_scores.push_back(final_score[i]);
  }

  // 6. max_dets per image, by final score (the output order).
  if (params.max_dets > 0) {
    std::unordered_map<std::int64_t, std::int64_t> per_image;
    std::size_t w = 0;
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::int64_t image = in.image_ids ? in.image_ids[out[k]] : 0;
      if (++per_image[image] > params.max_dets) continue;
      out[w] = out[k];
      out_scores[w] = out_scores[k];
      ++w;
    }
    out.resize(w);
    out_scores.resize(w);
  }
  result.keep = std::move(out);
  result.scores = std::move(out_scores);
  return result;
}

}  // namespace s3d::detection::detail
