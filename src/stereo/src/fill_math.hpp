#pragma once
// Occlusion fill of invalid pixels (after Hirschmüller, PAMI 2008, section 3.4: occluded pixels take the
// background disparity), one row at a time; shared by both backends. Copies, one subtraction, one addition and
// comparisons: bit-identical everywhere.
#include <cstddef>

#include "median_math.hpp"
#include "s3d/core/host_device.hpp"

namespace s3d::stereo::detail {

/// Slack (pixels) of the occlusion test in fill_occlusions_row(): a run may be this much wider than the
/// disparity step across it (subpixel values, the median's and the LR check's rounding, fattened edges).
/// Chosen on ../shared/data/stereo (docs/ACCURACY.md: 0, 1, 2, 3, 4 measured; 2 meets most targets).
inline constexpr float kFillSlack = 2.0f;

/// Fills the invalid pixels (!finite_disparity) of one row in place, where the geometry says they are an
/// occlusion. In a rectified pair, the part of the background that a nearer surface hides from the right
/// view is, in the left view, a run just beside the depth step, as wide as the disparity step l - r across
/// it. So each maximal run [b, e) of invalid pixels with valid neighbours on both sides, l = row[b-1] and
/// r = row[e], is filled with the smaller (farther, background) of the two when e - b <= |l - r| + kFillSlack;
/// every other run stays invalid: runs wider than that are not explained by an occlusion (mismatches,
/// textureless areas, rejected regions), and runs touching the row's start or end have no background to
/// take (the left band where part of the range falls outside the right image, the right border). Only
/// values of the input row are read (a run's neighbours are valid input pixels), so the result does not
/// depend on the scan order.
S3D_HOST_DEVICE inline void fill_occlusions_row(float* row, int width) {
  int x = 0;
  while (x < width) {
    if (finite_disparity(row[x])) {
      ++x;
      continue;
    }
    int e = x;
    while (e < width && !finite_disparity(row[e])) ++e;
    if (x > 0 && e < width) {
      const float l = row[x - 1];
      const float r = row[e];
      const float step = l > r ? l - r : r - l;
      if (static_cast<float>(e - x) <= step + kFillSlack) {
        const float v = r < l ? r : l;
        for (int k = x; k < e; ++k) row[k] = v;
      }
    }
    x = e;
  }
}

}  // namespace s3d::stereo::detail
