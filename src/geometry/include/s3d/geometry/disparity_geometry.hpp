#pragma once
// Disparity maps to depth maps and point clouds (host, single-threaded: one pass over the pixels).
// Invalid disparities (non-finite, or d + doffs <= 0) give +inf depth and no point.
#include <cstdint>
#include <limits>

#include "s3d/core/point_cloud.hpp"
#include "s3d/core/views.hpp"
#include "s3d/geometry/camera.hpp"

namespace s3d::geometry {

/// Interleaved 8-bit colour of `channels` (1 grey or 3 RGB) samples per pixel, dense rows. Not owned.
struct ColourView {
  const std::uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
};

/// Writes the depth (metres) of every pixel of `disparity` (pixels) into `depth` (same size; +inf where
/// invalid). @throws InvalidArgument when the sizes differ.
void depth_from_disparity(ImageView<const float> disparity, const StereoCalibration& calib, ImageView<float> depth);

/// One point per valid disparity pixel with depth <= max_depth_m, in raster order (camera frame, metres),
/// with uint8 attributes `red`, `green`, `blue` from `colour` (grey is replicated) or 255 when `colour`
/// is null, and a comment naming the frame. @throws DataError when `colour` has another size,
/// InvalidArgument for a channel count other than 1 or 3.
PointCloud cloud_from_disparity(ImageView<const float> disparity, const StereoCalibration& calib,
                                const ColourView* colour = nullptr,
                                float max_depth_m = std::numeric_limits<float>::infinity());

}  // namespace s3d::geometry
