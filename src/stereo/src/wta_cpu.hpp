#pragma once
// Internal (CPU backend): the per-pixel winner-take-all decision, shared by the separate WTA pass
// (wta_cpu.cpp) and the sweeps that fuse it (aggregate_sweep_cpu.cpp, aggregate_sweep_avx512_cpu.cpp).
#include <algorithm>
#include <climits>
#include <cstdint>

#include "backend.hpp"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cpu {

/// Winner-take-all decision of pixel x from its summed costs s[0..D) and the winner (lowest d of the least
/// sum): uniqueness, subpixel, confidence (same decisions as the CUDA WTA).
__attribute__((always_inline)) inline void wta_pixel(const std::uint16_t* __restrict s, int best, int best_cost, int x,
                                                     const MatchSpec& spec, float* __restrict disparity,
                                                     float* __restrict confidence) {
  const int W = spec.width, D = spec.disparities;
  int second = INT_MAX;
  if (spec.uniqueness > 0 || confidence) {  // min over |d - best| > 1
    std::uint16_t m = 0xffff;
    for (int d = 0; d < best - 1; ++d) m = std::min(m, s[d]);
    for (int d = best + 2; d < D; ++d) m = std::min(m, s[d]);
    if (best - 1 > 0 || best + 2 < D) second = m;
  }
  const bool ok =
      target_inside(x, best, spec.min_disparity, spec.sign, W) && passes_uniqueness(best_cost, second, spec.uniqueness);
  if (ok) {
    const int sm = best > 0 ? s[best - 1] : 0;
    const int sp = best < D - 1 ? s[best + 1] : 0;
    disparity[x] = wta_disparity(best, D, spec.min_disparity, spec.subpixel, sm, best_cost, sp);
  } else {
    disparity[x] = kInvalidDisparity;
  }
  if (confidence) confidence[x] = ok ? wta_confidence(best_cost, second) : 0.0f;
}

/// One row of the right view's winners (LrMethod::kVolume), in two planes of W + D - 1 entries: right pixel
/// x_r = x - min_disparity - d of left pixel x sits at [W - 1 - x + d], so one pixel's D entries are contiguous.
/// Sixteen-bit planes, not wta_math.hpp's 32-bit keys: twice the lanes a vector; the same winners.
struct RightRow {
  std::uint16_t* sum = nullptr;  ///< the least sum so far
  std::uint16_t* d = nullptr;    ///< its disparity index; kNoRightD: none yet
  explicit operator bool() const { return sum != nullptr; }
};
inline constexpr std::uint16_t kNoRightD = 0xffff;

/// Folds left pixel x's sums s[0..D) into `row`: the least sum wins, and the lowest d among equal sums (the
/// order of right_key). Along a row a later pixel brings a larger d to the same entry when x ascends and a
/// smaller one when x descends, so it takes an equal sum only when x descends.
template <bool kAscending>
__attribute__((always_inline)) inline void fold_right(const std::uint16_t* __restrict s, int x, int W, int D,
                                                      RightRow row) {
  std::uint16_t* __restrict ms = row.sum + (W - 1 - x);
  std::uint16_t* __restrict md = row.d + (W - 1 - x);
  for (int d = 0; d < D; ++d) {
    const std::uint16_t v = s[d], m = ms[d], k = md[d];
    const bool take = kAscending ? (v < m || k == kNoRightD) : v <= m;
    ms[d] = take ? v : m;
    md[d] = take ? static_cast<std::uint16_t>(d) : k;
  }
}

__attribute__((always_inline)) inline void fold_right(const std::uint16_t* __restrict s, int x, int W, int D,
                                                      bool ascending, RightRow row) {
  if (ascending)
    fold_right<true>(s, x, W, D, row);
  else
    fold_right<false>(s, x, W, D, row);
}

/// The right view's disparities of one row from its folded winners.
inline void right_row_disparities(RightRow row, const MatchSpec& spec, float* right) {
  const int W = spec.width, n = spec.width + spec.disparities - 1;
  for (int xr = 0; xr < W; ++xr) {
    const int q = W - 1 - spec.min_disparity - xr;
    const std::uint32_t key = q >= 0 && q < n && row.d[q] != kNoRightD ? right_key(row.sum[q], row.d[q]) : kNoRightKey;
    right[xr] = right_view_disparity(key, xr, spec.min_disparity, spec.right_edge);
  }
}

}  // namespace s3d::stereo::detail::cpu
