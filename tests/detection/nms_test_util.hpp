#pragma once
// Generators and straightforward references for the NMS tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/detection/nms.hpp"

namespace s3d::detection::test {

struct BoxSet {
  std::vector<float> boxes;  // n x dim
  std::vector<float> scores;
  std::vector<std::int64_t> groups;
  std::vector<std::int64_t> images;
  int dim = 4;
  std::int64_t size() const { return static_cast<std::int64_t>(scores.size()); }
  NmsInput input(bool use_groups = true, bool use_images = true) const {
    NmsInput in;
    in.boxes = boxes.data();
    in.scores = scores.data();
    in.group_ids = use_groups && !groups.empty() ? groups.data() : nullptr;
    in.image_ids = use_images && !images.empty() ? images.data() : nullptr;
    in.count = size();
    return in;
  }
};

/// Clustered boxes (jittered copies around random centres, as detectors produce), with ties (scores
/// quantised to `score_levels` values when > 0), exact duplicates and degenerate (zero-area, inverted) boxes.
inline BoxSet clustered(std::int64_t n, std::uint32_t seed, int groups = 1, int score_levels = 0,
                        float degenerate_fraction = 0.02f, float canvas = 1000.f, int per_cluster = 20) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u01(0.f, 1.f);
  std::normal_distribution<float> jitter(0.f, 1.f);
  BoxSet s;
  s.boxes.reserve(static_cast<std::size_t>(n) * 4);
  float cx = 0, cy = 0, w = 0, h = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % per_cluster == 0) {
      cx = u01(rng) * canvas;
      cy = u01(rng) * canvas;
      w = 8.f + u01(rng) * canvas * 0.08f;
      h = 8.f + u01(rng) * canvas * 0.08f;
    }
    float x1, y1, x2, y2;
    const float r = u01(rng);
    if (r < degenerate_fraction * 0.5f) {  // zero area
      x1 = x2 = cx;
      y1 = cy - h / 2;
      y2 = cy + h / 2;
    } else if (r < degenerate_fraction) {  // inverted
      x1 = cx + w / 2;
      x2 = cx - w / 2;
      y1 = cy - h / 2;
      y2 = cy + h / 2;
    } else if (r < degenerate_fraction + 0.05f && i > 0) {  // exact duplicate of the previous box
      x1 = s.boxes[(i - 1) * 4 + 0];
      y1 = s.boxes[(i - 1) * 4 + 1];
      x2 = s.boxes[(i - 1) * 4 + 2];
      y2 = s.boxes[(i - 1) * 4 + 3];
    } else {
      const float bx = cx + jitter(rng) * w * 0.1f, by = cy + jitter(rng) * h * 0.1f;
      const float bw = w * (1.f + 0.1f * jitter(rng)), bh = h * (1.f + 0.1f * jitter(rng));
      x1 = bx - bw / 2;
      y1 = by - bh / 2;
      x2 = bx + bw / 2;
      y2 = by + bh / 2;
    }
    s.boxes.insert(s.boxes.end(), {x1, y1, x2, y2});
    float score = u01(rng);
    if (score_levels > 0) score = std::floor(score * score_levels) / score_levels;
    s.scores.push_back(score);
    s.groups.push_back(groups > 1 ? static_cast<std::int64_t>(rng() % groups) * 7 - 3 : 0);
    s.images.push_back(s.groups.back() / 3);
  }
  return s;
}

/// Rotated boxes (cx, cy, w, h, angle radians), clustered.
inline BoxSet rotated_clustered(std::int64_t n, std::uint32_t seed, int groups = 1, int score_levels = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u01(0.f, 1.f);
  std::normal_distribution<float> jitter(0.f, 1.f);
  BoxSet s;
  s.dim = 5;
  float cx = 0, cy = 0, w = 0, h = 0, a = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % 10 == 0) {
      cx = u01(rng) * 200.f;
      cy = u01(rng) * 200.f;
      w = 4.f + u01(rng) * 30.f;
      h = 4.f + u01(rng) * 30.f;
      a = (u01(rng) - 0.5f) * 6.3f;
    }
    const float r = u01(rng);
    float bw = w * (1.f + 0.1f * jitter(rng)), bh = h * (1.f + 0.1f * jitter(rng));
    if (r < 0.02f) bw = 0.f;
    s.boxes.insert(s.boxes.end(),
                   {cx + jitter(rng) * w * 0.1f, cy + jitter(rng) * h * 0.1f, bw, bh, a + 0.2f * jitter(rng)});
    float score = u01(rng);
    if (score_levels > 0) score = std::floor(score * score_levels) / score_levels;
    s.scores.push_back(score);
    s.groups.push_back(groups > 1 ? static_cast<std::int64_t>(rng() % groups) : 0);
    s.images.push_back(0);
  }
  return s;
}

/// torchvision's loop, per group, no cleverness: the reference for hard NMS (uses the library's pair IoU).
inline std::vector<std::int64_t> reference_hard(const BoxSet& s, const NmsParams& p, bool use_groups = true,
                                                bool use_images = true) {
  const int dim = p.box_dim();
  std::vector<std::int64_t> order;
  for (std::int64_t i = 0; i < s.size(); ++i)
    if (s.scores[i] >= p.min_score) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return s.scores[a] > s.scores[b]; });
  std::map<std::int64_t, std::vector<std::int64_t>> by_group;
  for (auto i : order) by_group[use_groups && !s.groups.empty() ? s.groups[i] : 0].push_back(i);
  std::vector<char> kept(static_cast<std::size_t>(s.size()), 0);
  for (auto& [g, v] : by_group) {
    if (p.pre_top_k > 0 && static_cast<std::int64_t>(v.size()) > p.pre_top_k) v.resize(p.pre_top_k);
    std::vector<char> sup(v.size(), 0);
    for (std::size_t a = 0; a < v.size(); ++a) {
      if (sup[a]) continue;
      kept[v[a]] = 1;
      for (std::size_t b = a + 1; b < v.size(); ++b) {
        const float iou = nms_iou(&s.boxes[v[a] * dim], &s.boxes[v[b] * dim], p);
        if (p.suppress_at_equal ? iou >= p.iou_threshold : iou > p.iou_threshold) sup[b] = 1;
      }
    }
  }
  std::vector<std::int64_t> out;
  std::map<std::int64_t, std::int64_t> per_image;
  for (auto i : order) {
    if (!kept[i]) continue;
    if (p.max_dets > 0 && ++per_image[use_images && !s.images.empty() ? s.images[i] : 0] > p.max_dets) continue;
    out.push_back(i);
  }
  return out;
}

/// Straightforward soft-NMS (mmcv's loop with deterministic ties), scores in double-exp for gaussian.
inline NmsResult reference_soft(const BoxSet& s, const NmsParams& p) {
  const int dim = p.box_dim();
  std::map<std::int64_t, std::vector<std::int64_t>> by_group;
  for (std::int64_t i = 0; i < s.size(); ++i)
    if (s.scores[i] >= p.min_score) by_group[s.groups.empty() ? 0 : s.groups[i]].push_back(i);
  std::vector<std::pair<float, std::int64_t>> sel;
  for (auto& [g, v] : by_group) {
    std::vector<std::pair<float, std::int64_t>> live;
    for (auto i : v)
      if (s.scores[i] >= p.soft_min_score) live.push_back({s.scores[i], i});
    while (!live.empty()) {
      auto best = std::min_element(live.begin(), live.end(), [](auto& a, auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      });
      const auto chosen = *best;
      live.erase(best);
      sel.push_back(chosen);
      std::vector<std::pair<float, std::int64_t>> next;
      for (auto [sc, j] : live) {
        const float iou = nms_iou(&s.boxes[chosen.second * dim], &s.boxes[j * dim], p);
        float w = 1.f;
        if (p.method == NmsMethod::kSoftLinear) {
          if (p.suppress_at_equal ? iou >= p.iou_threshold : iou > p.iou_threshold) w = 1.f - iou;
        } else if (!std::isnan(iou)) {
          w = static_cast<float>(std::exp(static_cast<double>(-(iou * iou) / p.sigma)));
        }
        sc = sc * w;
        if (sc >= p.soft_min_score) next.push_back({sc, j});
      }
      live.swap(next);
    }
  }
  std::sort(sel.begin(), sel.end(),
            [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  NmsResult r;
  for (auto [sc, i] : sel) {
    r.keep.push_back(i);
    r.scores.push_back(sc);
  }
  return r;
}

/// A box set copied to device memory, as run_device_async() takes it.
struct DeviceBoxSet {
  DeviceBuffer<float> boxes, scores;
  DeviceBuffer<std::int64_t> groups;
  NmsInput input;

  /// Overwrites the device copy in place when the size is unchanged (same pointers: a graph replays on it).
  void upload(const BoxSet& s, StreamHandle stream) {
    boxes.copy_from_host(s.boxes, stream);
    scores.copy_from_host(s.scores, stream);
    groups.copy_from_host(s.groups, stream);
    input.boxes = boxes.data();
    input.scores = scores.data();
    input.group_ids = groups.data();
    input.image_ids = nullptr;
    input.count = s.size();
  }
};

}  // namespace s3d::detection::test
