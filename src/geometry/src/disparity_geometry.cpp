#include "s3d/geometry/disparity_geometry.hpp"

#include <cmath>

#include "s3d/core/errors.hpp"

namespace s3d::geometry {

void depth_from_disparity(ImageView<const float> disparity, const StereoCalibration& calib, ImageView<float> depth) {
  S3D_EXPECTS(disparity.width == depth.width && disparity.height == depth.height,
              "depth_from_disparity: depth image size differs from the disparity map's");
  for (int y = 0; y < disparity.height; ++y)
    for (int x = 0; x < disparity.width; ++x) depth(x, y) = calib.depth(disparity(x, y));
}

PointCloud cloud_from_disparity(ImageView<const float> disparity, const StereoCalibration& calib,
                                const ColourView* colour, float max_depth_m) {
  if (colour && (colour->width != disparity.width || colour->height != disparity.height))
    throw DataError("colour image is " + std::to_string(colour->width) + "x" + std::to_string(colour->height) +
                    " but the disparity map is " + std::to_string(disparity.width) + "x" +
                    std::to_string(disparity.height));
  S3D_EXPECTS(!colour || colour->channels == 1 || colour->channels == 3,
              "cloud_from_disparity: colour must have 1 or 3 channels");
  const PinholeIntrinsics k = left_intrinsics(calib, disparity.width, disparity.height);
  std::vector<float> xyz;
  std::vector<std::uint8_t> rgb;
  for (int y = 0; y < disparity.height; ++y)
    for (int x = 0; x < disparity.width; ++x) {
      const float z = calib.depth(disparity(x, y));
      if (!std::isfinite(z) || z > max_depth_m) continue;
      const double z_over_f = z / calib.focal_px;
      xyz.push_back(static_cast<float>((x - k.cx) * z_over_f));
      xyz.push_back(static_cast<float>((y - k.cy) * z_over_f));
      xyz.push_back(z);
      for (int c = 0; c < 3; ++c) {
        const std::size_t pixel = static_cast<std::size_t>(y) * disparity.width + x;
        rgb.push_back(colour ? colour->data[pixel * colour->channels + (colour->channels == 3 ? c : 0)]
                             : std::uint8_t{255});
      }
    }
  PointCloud cloud;
  cloud.xyz = std::move(xyz);
  const std::size_t n = cloud.size();
  const char* names[3] = {"red", "green", "blue"};
  for (int c = 0; c < 3; ++c) {
    AttributeColumn& a = cloud.add_attribute(names[c], ScalarType::kUint8);
    for (std::size_t i = 0; i < n; ++i) a.bytes[i] = rgb[3 * i + c];
  }
  cloud.meta.comments.push_back("s3d point cloud (camera frame: x right, y down, z forward; metres)");
  return cloud;
}

}  // namespace s3d::geometry
