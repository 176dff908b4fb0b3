#include "s3d/geometry/camera.hpp"

#include <cmath>
#include <limits>

#include "s3d/core/errors.hpp"

namespace s3d::geometry {

void StereoCalibration::validate() const {
  if (!(std::isfinite(focal_px) && focal_px > 0.0))
    throw DataError(source + ": focal length must be positive (got " + std::to_string(focal_px) + ")");
  if (!(std::isfinite(baseline_m) && baseline_m > 0.0))
    throw DataError(source + ": baseline must be positive (got " + std::to_string(baseline_m) + ")");
}

float StereoCalibration::depth(float d) const {
  const double den = static_cast<double>(d) + doffs;
  if (!std::isfinite(d) || !(den > 0.0)) return std::numeric_limits<float>::infinity();
  return static_cast<float>(focal_px * baseline_m / den);
}

void PinholeIntrinsics::validate() const {
  if (!(std::isfinite(fx) && fx > 0.0 && std::isfinite(fy) && fy > 0.0))
    throw DataError(source + ": focal lengths must be positive (fx " + std::to_string(fx) + ", fy " +
                    std::to_string(fy) + ")");
  if (!std::isfinite(cx) || !std::isfinite(cy)) throw DataError(source + ": principal point is not finite");
  if (width < 0 || height < 0) throw DataError(source + ": negative image size");
}

PinholeIntrinsics left_intrinsics(const StereoCalibration& calib, int width, int height) {
  PinholeIntrinsics k;
  k.fx = k.fy = calib.focal_px;
  k.cx = calib.has_principal_point ? calib.cx : (width - 1) * 0.5;
  k.cy = calib.has_principal_point ? calib.cy : (height - 1) * 0.5;
  k.width = width;
  k.height = height;
  k.source = calib.source;
  return k;
}

}  // namespace s3d::geometry
