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

/// Folds left pixel x's sums s[0..D) into the right view's keys (wta_math.hpp's right_key): right pixel
/// x_r = x - min_disparity - d sits at keys[W - 1 - x + d], so one pixel's D keys are contiguous. `keys`
/// holds W + D - 1 entries, set to kNoRightKey before the row's first pixel.
__attribute__((always_inline)) inline void fold_right_keys(const std::uint16_t* __restrict s, int x, int W, int D,
                                                           std::uint32_t* __restrict keys) {
  std::uint32_t* __restrict k = keys + (W - 1 - x);
  for (int d = 0; d < D; ++d) k[d] = std::min(k[d], right_key(s[d], d));
}

/// The right view's disparities of one row from its folded keys.
inline void right_row_from_keys(const std::uint32_t* keys, const MatchSpec& spec, float* right) {
  const int W = spec.width, n = spec.width + spec.disparities - 1;
  for (int xr = 0; xr < W; ++xr) {
    const int q = W - 1 - spec.min_disparity - xr;
    right[xr] = right_key_disparity(q >= 0 && q < n ? keys[q] : kNoRightKey, spec.min_disparity);
  }
}

}  // namespace s3d::stereo::detail::cpu
