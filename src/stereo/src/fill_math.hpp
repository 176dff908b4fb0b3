#pragma once
// Background fill of invalid pixels (Hirschmüller, PAMI 2008, section 3.4 "occlusions"), one row at a time;
// shared by both backends. Copies and comparisons only: bit-identical everywhere.
#include <cstddef>

#include "median_math.hpp"
#include "s3d/core/host_device.hpp"

namespace s3d::stereo::detail {

/// Fills the invalid pixels (!finite_disparity) of one row in place. Each maximal run [b, e) of invalid
/// pixels takes, in every pixel, the smaller of its valid neighbours row[b-1] and row[e] (the farther
/// surface: occlusions belong to the background); a run touching the row's start or end takes the one
/// neighbour that exists; a row without any valid pixel is left as it is. Only values of the input row are
/// copied (filled values never feed another run), so the result does not depend on the scan order.
S3D_HOST_DEVICE inline void fill_background_row(float* row, int width) {
  int x = 0;
  while (x < width) {
    if (finite_disparity(row[x])) {
      ++x;
      continue;
    }
    int e = x;
    while (e < width && !finite_disparity(row[e])) ++e;
    const bool has_left = x > 0;
    const bool has_right = e < width;
    if (has_left || has_right) {
      float v;
      if (has_left && has_right) {
        const float l = row[x - 1];
        const float r = row[e];
        v = r < l ? r : l;
      } else {
        v = has_left ? row[x - 1] : row[e];
      }
      for (int k = x; k < e; ++k) row[k] = v;
    }
    x = e;
  }
}

}  // namespace s3d::stereo::detail
