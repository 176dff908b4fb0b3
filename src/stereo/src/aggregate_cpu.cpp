// Cost volume and SGM path aggregation, CPU backend.
// Layout [y][x][d] (uint8 costs, uint16 sums). Inner loops run over d and vectorise (uint16 lanes).
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
inline int path_step_row(const std::uint8_t* __restrict cost, const std::uint16_t* __restrict prev, int prev_min,
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
inline int path_start(const std::uint8_t* __restrict cost, std::uint16_t* __restrict cur, std::uint16_t* __restrict vol,
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

S3D_STEREO_POPCNT_CLONES
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


namespace {

constexpr int kBand = 32;  // scanlines walked together by one thread (adjacent pixels of one row)

/// A band of up to kBand adjacent scanlines of a direction with dy != 0, walked row by row so that each row
/// touches one contiguous run of the volume (a column-by-column walk would miss the TLB at every step).
/// Virtual column v: x(i) = x0(v) + i*dx at sweep row i; a scanline starts where it enters the image.
S3D_STEREO_CLONES
void sweep_band(const std::uint8_t* __restrict cost, std::uint16_t* __restrict volume, const MatchSpec& s, int dx,
                int dy, int v_begin, int v_end, bool assign, std::uint16_t* state, int* mins) {
  const int W = s.width, H = s.height, D = s.disparities;
  const int stride = D + 2;
  const int x_shift = dx > 0 ? -(H - 1) : 0;  // x0(v) = v + x_shift
  for (int i = 0; i < H; ++i) {
    const int y = dy > 0 ? i : H - 1 - i;
    const int slot = i & 1;
    for (int v = v_begin; v < v_end; ++v) {
      const int x = v + x_shift + i * dx;
      if (x < 0 || x >= W) continue;
      const int k = v - v_begin;
      std::uint16_t* cur = state + (static_cast<std::size_t>(slot) * kBand + k) * stride + 1;
      const std::uint16_t* prev = state + (static_cast<std::size_t>(slot ^ 1) * kBand + k) * stride + 1;
      const std::ptrdiff_t o = (static_cast<std::ptrdiff_t>(y) * W + x) * D;
      const int px = x - dx;
      if (i == 0 || px < 0 || px >= W) {
        mins[slot * kBand + k] = path_start(cost + o, cur, volume + o, D, assign);
      } else {
        mins[slot * kBand + k] =
            path_step_row(cost + o, prev, mins[(slot ^ 1) * kBand + k], cur, volume + o, D, s.p1, s.p2, assign);
      }
    }
  }
}

/// Both horizontal paths of row y (left->right assigns, right->left adds); the row stays in cache.
S3D_STEREO_CLONES
void horizontal_row(const std::uint8_t* __restrict cost, std::uint16_t* __restrict volume, const MatchSpec& s, int y,
                    std::uint16_t* buf) {
  const int W = s.width, D = s.disparities;
  const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(y) * W * D;
  const std::uint8_t* c = cost + row;
  std::uint16_t* v = volume + row;
  std::uint16_t* a = buf + 1;
  std::uint16_t* b = buf + D + 3;
  int mn = path_start(c, a, v, D, true);
  for (int x = 1; x < W; ++x) {
    mn = path_step_row(c + x * D, a, mn, b, v + x * D, D, s.p1, s.p2, true);
    std::swap(a, b);
  }
  mn = path_start(c + (W - 1) * D, a, v + (W - 1) * D, D, false);
  for (int x = W - 2; x >= 0; --x) {
    mn = path_step_row(c + x * D, a, mn, b, v + x * D, D, s.p1, s.p2, false);
    std::swap(a, b);
  }
}

}  // namespace

void aggregate(const std::uint8_t* cost, const MatchSpec& s, std::uint16_t* volume) {
  const int W = s.width;
  const int H = s.height;
  const int D = s.disparities;
  // Horizontal pair per row, then each other path as bands of independent scanlines (the same scanlines
  // the CUDA backend walks): no per-row synchronisation, one barrier per path.
#pragma omp parallel
  {
    std::vector<std::uint16_t> buf(2 * (D + 2), kSentinel);
    std::vector<std::uint16_t> state(static_cast<std::size_t>(2) * kBand * (D + 2), kSentinel);
    std::vector<int> mins(2 * kBand, 0);
#pragma omp for schedule(dynamic, 2)
    for (int y = 0; y < H; ++y) horizontal_row(cost, volume, s, y, buf.data());
    for (int p = 2; p < s.paths; ++p) {
      int dx, dy;
      path_direction(p, dx, dy);
      const int columns = dx == 0 ? W : W + H - 1;
      const int bands = (columns + kBand - 1) / kBand;
#pragma omp for schedule(dynamic, 1)
      for (int band = 0; band < bands; ++band)
        sweep_band(cost, volume, s, dx, dy, band * kBand, std::min(columns, (band + 1) * kBand), false, state.data(),
                   mins.data());
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
