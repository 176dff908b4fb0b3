#pragma once
// Matching cost and the SGM path recurrence (Hirschmüller 2008, eq. 13), shared by both backends:
//   L_r(p, d) = C(p, d) + min(L_r(p-r, d), L_r(p-r, d+-1) + P1, min_k L_r(p-r, k) + P2) - min_k L_r(p-r, k)
// All integer: 0 <= L_r <= max_cost + P2, so the sum over <= 8 paths fits uint16 once validated.
#include <cstdint>

#include "s3d/core/host_device.hpp"

namespace s3d::stereo::detail {

S3D_HOST_DEVICE S3D_FORCEINLINE int popcount64(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __popcll(v);
#else
  return __builtin_popcountll(v);
#endif
}

/// Cost of matching reference pixel x (code `ref`) at disparity `disparity` (pixels, min included):
/// target column x + sign*disparity; `max_cost` when that column is outside [0, width).
S3D_HOST_DEVICE S3D_FORCEINLINE int match_cost(std::uint64_t ref, const std::uint64_t* target_row, int x, int disparity,
                                               int sign, int width, int max_cost) {
  const int xt = x + sign * disparity;
  return (xt < 0 || xt >= width) ? max_cost : popcount64(ref ^ target_row[xt]);
}

/// One step of the recurrence. `prev_minus`/`prev_plus` are L(p-r, d-1)/L(p-r, d+1) (a large value
/// outside [0, D)); `prev_min` = min_k L(p-r, k).
S3D_HOST_DEVICE S3D_FORCEINLINE int path_step(int cost, int prev, int prev_minus, int prev_plus, int prev_min, int p1,
                                              int p2) {
  int m = prev_minus < prev_plus ? prev_minus : prev_plus;
  m += p1;
  int v = prev < m ? prev : m;
  const int jump = prev_min + p2;
  v = v < jump ? v : jump;
  return cost + (v - prev_min);
}

/// Path directions (dx, dy): the first 4 are horizontal/vertical, the next 4 diagonal.
S3D_HOST_DEVICE S3D_FORCEINLINE void path_direction(int index, int& dx, int& dy) {
  constexpr int kDx[8] = {1, -1, 0, 0, 1, -1, 1, -1};
  constexpr int kDy[8] = {0, 0, 1, -1, 1, 1, -1, -1};
  dx = kDx[index];
  dy = kDy[index];
}

}  // namespace s3d::stereo::detail
