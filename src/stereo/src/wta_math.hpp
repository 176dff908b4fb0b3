#pragma once
// Winner-take-all decisions shared by both backends: uniqueness (OpenCV's uniquenessRatio rule, integer),
// confidence and the final disparity value.
#include <cstdint>
#include <limits>

#include "s3d/core/host_device.hpp"
#include "s3d/stereo/sgm.hpp"
#include "subpixel_math.hpp"

namespace s3d::stereo::detail {

/// `second` = min S(d) over |d - best| > 1 (INT_MAX when there is none). Unique iff no such d has
/// S(d) * (100 - u) < S(best) * 100.
S3D_HOST_DEVICE S3D_FORCEINLINE bool passes_uniqueness(int best_cost, int second, int uniqueness) {
  if (uniqueness <= 0) return true;
  return static_cast<long long>(second) * (100 - uniqueness) >= static_cast<long long>(best_cost) * 100;
}

/// (S2 - S1) / S2 in [0, 1]; 0 without a second candidate or when S2 == 0.
S3D_HOST_DEVICE S3D_FORCEINLINE float wta_confidence(int best_cost, int second) {
  if (second <= 0 || second == 0x7fffffff) return 0.0f;
  return static_cast<float>(second - best_cost) / static_cast<float>(second);
}

/// Disparity in pixels for winner index `best` (0..D-1) given neighbours' costs (ignored at the ends).
S3D_HOST_DEVICE S3D_FORCEINLINE float wta_disparity(int best, int disparities, int min_disparity, bool subpixel,
                                                    int s_minus, int s0, int s_plus) {
  float d = static_cast<float>(best + min_disparity);
  if (subpixel && best > 0 && best < disparities - 1) d = d + subpixel_offset(s_minus, s0, s_plus);
  return d;
}

/// True when the winner's target column lies inside the image (else the pixel has no real match).
S3D_HOST_DEVICE S3D_FORCEINLINE bool target_inside(int x, int best, int min_disparity, int sign, int width) {
  const int xt = x + sign * (best + min_disparity);
  return xt >= 0 && xt < width;
}

/// The right view's winners from the left view's sums (LrMethod::kVolume), in one key per right pixel:
/// (S(x, d) << 16) | d, least over the left pixels x = x_r + min_disparity + d, so the least sum wins and the
/// lowest d among equal sums. S <= 65535 (kMaxAggregatedCost) and d < 1024 fit; kNoRightKey: no left pixel.
inline constexpr std::uint32_t kNoRightKey = 0xffffffffu;

S3D_HOST_DEVICE S3D_FORCEINLINE std::uint32_t right_key(int sum, int d) {
  return (static_cast<std::uint32_t>(sum) << 16) | static_cast<std::uint32_t>(d);
}

/// Right pixel x_r's disparity (an integer, in pixels) from its key. Invalid within `right_edge` pixels of the
/// right image's left edge: there the census codes are built on replicated border pixels and the left pixels
/// whose range leaves the right image (the left band) match them; a right view from the same volume would
/// agree with those matches, where a true right-view match does not (docs/ACCURACY.md).
S3D_HOST_DEVICE S3D_FORCEINLINE float right_view_disparity(std::uint32_t key, int xr, int min_disparity,
                                                           int right_edge) {
  if (key == kNoRightKey || xr < right_edge) return kInvalidDisparity;
  return static_cast<float>(static_cast<int>(key & 0xffffu) + min_disparity);
}

}  // namespace s3d::stereo::detail
