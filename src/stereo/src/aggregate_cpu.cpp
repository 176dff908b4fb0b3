// Cost volume and SGM path aggregation, CPU backend.
// Layout [y][x][d] (uint8 costs, uint16 sums). Horizontal paths: one row per task (both directions).
// Vertical and diagonal paths: a top-down and a bottom-up sweep over rows, each row's pixels split among
// the threads (the rows depend on each other, the pixels of one row do not); the 1 or 3 paths of a sweep
// share its pass over the volume. Inner loops run over d and vectorise (uint16 lanes).
#include <algorithm>
#include <cstring>
#include <vector>

#include "aggregate_math.hpp"
#include "backend.hpp"
#include "cpu_simd.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

constexpr std::uint16_t kSentinel = 0x7fff;  // > any L (<= 16383 once validated), and + P1 fits uint16

/// cur[0..D) = L(p, .) from prev (prev[-1] and prev[D] hold kSentinel); accumulates into vol
/// (assigns when `assign`). Returns min_d cur.
S3D_STEREO_CLONES
int path_step_row(const std::uint8_t* __restrict cost, const std::uint16_t* __restrict prev, int prev_min,
                  std::uint16_t* __restrict cur, std::uint16_t* __restrict vol, int D, int p1, int p2,
                  bool assign) {
  const std::uint16_t jump = static_cast<std::uint16_t>(prev_min + p2);
  const std::uint16_t pm = static_cast<std::uint16_t>(prev_min);
  const std::uint16_t P1 = static_cast<std::uint16_t>(p1);
  std::uint16_t mn = 0xffff;
  for (int d = 0; d < D; ++d) {
    std::uint16_t m = std::min(prev[d - 1], prev[d + 1]);
    m = static_cast<std::uint16_t>(m + P1);
    std::uint16_t v = std::min(prev[d], m);
    v = std::min(v, jump);
    const std::uint16_t l = static_cast<std::uint16_t>(cost[d] + static_cast<std::uint16_t>(v - pm));
    cur[d] = l;
    mn = std::min(mn, l);
  }
  if (assign) {
    for (int d = 0; d < D; ++d) vol[d] = cur[d];
  } else {
    for (int d = 0; d < D; ++d) vol[d] = static_cast<std::uint16_t>(vol[d] + cur[d]);
  }
  return mn;
}

/// First pixel of a path: L = C.
S3D_STEREO_CLONES
int path_start(const std::uint8_t* __restrict cost, std::uint16_t* __restrict cur, std::uint16_t* __restrict vol,
               int D, bool assign) {
  std::uint16_t mn = 0xffff;
  for (int d = 0; d < D; ++d) {
    cur[d] = cost[d];
    mn = std::min<std::uint16_t>(mn, cost[d]);
  }
  if (assign) {
    for (int d = 0; d < D; ++d) vol[d] = cur[d];
  } else {
    for (int d = 0; d < D; ++d) vol[d] = static_cast<std::uint16_t>(vol[d] + cur[d]);
  }
  return mn;
}

}  // namespace

S3D_STEREO_CLONES
static void cost_row(const std::uint64_t* __restrict ref, const std::uint64_t* __restrict target, int W, int D,
                     int min_d, int sign, int max_cost, std::uint8_t* __restrict out) {
  for (int x = 0; x < W; ++x) {
    const std::uint64_t r = ref[x];
    std::uint8_t* c = out + static_cast<std::ptrdiff_t>(x) * D;
    // target column x + sign*(min_d + d): inside for d in [lo, hi)
    int lo, hi;
    if (sign < 0) {  // xt = x - min_d - d in [0, W)  <=>  d in (x - min_d - W, x - min_d]
      lo = x - min_d - W + 1;
      hi = x - min_d + 1;
    } else {         // xt = x + min_d + d in [0, W)  <=>  d in [-x - min_d, W - x - min_d)
      lo = -x - min_d;
      hi = W - x - min_d;
    }
    lo = std::max(lo, 0);
    hi = std::min(hi, D);
    for (int d = 0; d < std::min(lo, D); ++d) c[d] = static_cast<std::uint8_t>(max_cost);
    for (int d = lo; d < hi; ++d) {
      const int xt = x + sign * (min_d + d);
      c[d] = static_cast<std::uint8_t>(popcount64(r ^ target[xt]));
    }
    for (int d = std::max(hi, lo); d < D; ++d) c[d] = static_cast<std::uint8_t>(max_cost);
  }
}

void cost_volume(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint8_t* cost) {
  const int W = s.width;
  const int D = s.disparities;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < s.height; ++y) {
    const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * W;
    cost_row(ref + o, target + o, W, D, s.min_disparity, s.sign, s.max_cost, cost + o * D);
  }
}

void aggregate(const std::uint8_t* cost, const MatchSpec& s, std::uint16_t* volume) {
  const int W = s.width;
  const int H = s.height;
  const int D = s.disparities;
  const std::ptrdiff_t row_elems = static_cast<std::ptrdiff_t>(W) * D;
  const int stride = D + 2;  // per-pixel L storage with sentinels at both ends

  // Horizontal paths (left->right assigns, right->left adds).
#pragma omp parallel
  {
    std::vector<std::uint16_t> buf(2 * stride, kSentinel);
#pragma omp for schedule(dynamic, 2)
    for (int y = 0; y < H; ++y) {
      const std::uint8_t* crow = cost + y * row_elems;
      std::uint16_t* vrow = volume + y * row_elems;
      std::uint16_t* a = buf.data() + 1;
      std::uint16_t* b = buf.data() + stride + 1;
      int mn = path_start(crow, a, vrow, D, true);
      for (int x = 1; x < W; ++x) {
        mn = path_step_row(crow + x * D, a, mn, b, vrow + x * D, D, s.p1, s.p2, true);
        std::swap(a, b);
      }
      mn = path_start(crow + (W - 1) * D, a, vrow + (W - 1) * D, D, false);
      for (int x = W - 2; x >= 0; --x) {
        mn = path_step_row(crow + x * D, a, mn, b, vrow + x * D, D, s.p1, s.p2, false);
        std::swap(a, b);
      }
    }
  }

  // Vertical (+ diagonal) sweeps.
  const int npaths = s.paths == 8 ? 3 : 1;
  const int kDx[3] = {0, 1, -1};
  std::vector<std::uint16_t> lbuf(static_cast<std::size_t>(2) * npaths * W * stride, kSentinel);
  std::vector<int> mbuf(static_cast<std::size_t>(2) * npaths * W, 0);
  for (int dy : {1, -1}) {
#pragma omp parallel
    for (int i = 0; i < H; ++i) {
      const int y = dy > 0 ? i : H - 1 - i;
      const std::uint8_t* crow = cost + y * row_elems;
      std::uint16_t* vrow = volume + y * row_elems;
      const int cur_slot = i & 1;
      const int prev_slot = cur_slot ^ 1;
#pragma omp for schedule(static)
      for (int x = 0; x < W; ++x) {
        for (int k = 0; k < npaths; ++k) {
          std::uint16_t* cur = lbuf.data() + ((static_cast<std::size_t>(cur_slot) * npaths + k) * W + x) * stride + 1;
          int* cur_min = mbuf.data() + (static_cast<std::size_t>(cur_slot) * npaths + k) * W + x;
          const int xp = x - kDx[k];
          if (i == 0 || xp < 0 || xp >= W) {
            *cur_min = path_start(crow + x * D, cur, vrow + x * D, D, false);
          } else {
            const std::uint16_t* prev =
                lbuf.data() + ((static_cast<std::size_t>(prev_slot) * npaths + k) * W + xp) * stride + 1;
            const int pmin = mbuf[(static_cast<std::size_t>(prev_slot) * npaths + k) * W + xp];
            *cur_min = path_step_row(crow + x * D, prev, pmin, cur, vrow + x * D, D, s.p1, s.p2, false);
          }
        }
      }
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
