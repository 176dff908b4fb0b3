#pragma once
// 3x3 median over the valid pixels of a window and the left-right rule; shared by both backends.
// Comparisons and copies only (plus one subtraction in the LR rule): bit-identical everywhere.
#include <cmath>

#include "s3d/core/host_device.hpp"

namespace s3d::stereo::detail {

S3D_HOST_DEVICE S3D_FORCEINLINE bool finite_disparity(float d) { return d < 3.0e38f && d > -3.0e38f; }

/// Median of the valid values among the 3x3 neighbourhood of (x, y) in `in` (row pitch `pitch`). With n
/// valid values (n >= 1, the centre is valid) the result is the (n/2)-th smallest (upper median).
S3D_HOST_DEVICE inline float median3x3_at(const float* in, long long pitch, int x, int y, int width, int height) {
  float v[9];
  int n = 0;
  for (int dy = -1; dy <= 1; ++dy) {
    const int yy = y + dy;
    if (yy < 0 || yy >= height) continue;
    for (int dx = -1; dx <= 1; ++dx) {
      const int xx = x + dx;
      if (xx < 0 || xx >= width) continue;
      const float d = in[yy * pitch + xx];
      if (!finite_disparity(d)) continue;
      // insertion sort
      int i = n++;
      while (i > 0 && v[i - 1] > d) {
        v[i] = v[i - 1];
        --i;
      }
      v[i] = d;
    }
  }
  return v[n / 2];
}

/// Left-right consistency of left disparity `d` at column x against the right map's row.
S3D_HOST_DEVICE inline bool lr_consistent(float d, int x, const float* right_row, int width, float max_diff) {
  const int xr = x - static_cast<int>(floorf(d + 0.5f));
  if (xr < 0 || xr >= width) return false;
  const float dr = right_row[xr];
  if (!finite_disparity(dr)) return false;
  const float diff = d > dr ? d - dr : dr - d;
  return diff <= max_diff;
}

}  // namespace s3d::stereo::detail
