#pragma once
// Parabola subpixel refinement through (d-1, S-), (d, S0), (d+1, S+), as OpenCV's StereoSGBM with the
// denominator clamped to >= 1 (flat minima). The offset lies in [-0.5, 0.5] because S0 is the minimum.
// Result scale: pixels (not 1/16). Float division only, no FMA: identical on CPU and GPU.
#include "s3d/core/host_device.hpp"

namespace s3d::stereo::detail {

S3D_HOST_DEVICE S3D_FORCEINLINE float subpixel_offset(int s_minus, int s0, int s_plus) {
  int denom = s_minus + s_plus - 2 * s0;
  denom = denom < 1 ? 1 : denom;
  return static_cast<float>(s_minus - s_plus) / static_cast<float>(2 * denom);
}

}  // namespace s3d::stereo::detail
