#pragma once
// Internal (CUDA backend): where the scanlines of a path direction start and how long they are, shared by
// every aggregation kernel (production, fallback and the experiments of src/stereo/experimental).
#include "s3d/core/host_device.hpp"

namespace s3d::stereo::detail::cuda {
namespace {

/// Scanline `scan` of direction (dx, dy): its entry pixel, or false when scan is past the last one.
__device__ S3D_FORCEINLINE bool scan_start(int scan, int W, int H, int dx, int dy, int& x, int& y) {
  if (dy == 0) {
    if (scan >= H) return false;
    y = scan;
    x = dx > 0 ? 0 : W - 1;
  } else if (dx == 0) {
    if (scan >= W) return false;
    x = scan;
    y = dy > 0 ? 0 : H - 1;
  } else {
    if (scan >= W + H - 1) return false;
    if (scan < W) {  // entry row
      x = dx > 0 ? scan : W - 1 - scan;
      y = dy > 0 ? 0 : H - 1;
    } else {  // entry column, corner excluded
      const int k = scan - W + 1;
      x = dx > 0 ? 0 : W - 1;
      y = dy > 0 ? k : H - 1 - k;
    }
  }
  return true;
}

/// Pixels of the scanline from (x, y) in direction (dx, dy) until it leaves the W x H image.
__device__ S3D_FORCEINLINE int scanline_steps(int x, int y, int dx, int dy, int W, int H) {
  int steps = 1 << 30;
  if (dx > 0) steps = min(steps, W - x);
  if (dx < 0) steps = min(steps, x + 1);
  if (dy > 0) steps = min(steps, H - y);
  if (dy < 0) steps = min(steps, y + 1);
  return steps;
}

}  // namespace
}  // namespace s3d::stereo::detail::cuda
