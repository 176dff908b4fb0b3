#pragma once
// Camera models: the rectified stereo rig (disparity <-> depth) and the pinhole intrinsics of one camera
// (depth image <-> points). Both use OpenCV's camera axes: x right, y down, z forward. The file parsers
// live in s3d::io (calib.hpp); these types carry no file format.
#include <string>

namespace s3d::geometry {

/// A rectified stereo pair reduced to the pinhole model of its LEFT camera and a baseline:
///     Z = focal_px * baseline / (d + doffs),   X = (x - cx) * Z / focal_px,   Y = (y - cy) * Z / focal_px
/// with d the left-view disparity in pixels and doffs = cx_right - cx_left (0 for most rigs; Middlebury's
/// `doffs`). Depth is in the unit of the baseline (metres). The same as OpenCV's reprojectImageTo3D with
///     Q = [1 0 0 -cx; 0 1 0 -cy; 0 0 0 f; 0 0 1/B doffs/B].
struct StereoCalibration {
  double focal_px = 0.0;    ///< focal length of the rectified pair, pixels (> 0)
  double baseline_m = 0.0;  ///< distance between the optical centres, metres (> 0)
  double cx = 0.0;          ///< principal point of the left camera, pixels (when `has_principal_point`)
  double cy = 0.0;
  double doffs = 0.0;  ///< cx_right - cx_left, pixels
  /// False for a bare focal + baseline: the image centre ((W-1)/2, (H-1)/2) is then used.
  bool has_principal_point = false;
  std::string source;  ///< the file (or inline text) it was read from
  std::string format;  ///< kitti, Q, yaml, middlebury, pairs, inline (for reports)

  /// Checks focal_px > 0 and baseline_m > 0 (finite). @throws DataError naming `source`.
  void validate() const;
  /// Depth (metres) of disparity `d` (pixels); +inf when d is not finite or d + doffs <= 0.
  float depth(float d) const;
};

/// Pinhole intrinsics of one camera: pixel (u, v) with depth Z is the point
///     X = (u - cx) * Z / fx,   Y = (v - cy) * Z / fy,   Z.
/// (TUM RGB-D / ICL-NUIM give them as "fx fy cx cy"; KITTI as the first row of a P matrix.)
struct PinholeIntrinsics {
  double fx = 0.0;  ///< focal lengths, pixels (> 0)
  double fy = 0.0;
  double cx = 0.0;  ///< principal point, pixels
  double cy = 0.0;
  int width = 0;  ///< image size the intrinsics belong to, pixels (0 = not known)
  int height = 0;
  std::string source;  ///< where they were read from (for messages)

  /// Checks fx, fy > 0 and finite cx, cy, and width/height >= 0. @throws DataError naming `source`.
  void validate() const;
};

/// The left camera of a stereo calibration (fx = fy = focal_px) for a `width` x `height` image; without a
/// principal point the image centre ((W-1)/2, (H-1)/2) is used, as the stereo functions do.
PinholeIntrinsics left_intrinsics(const StereoCalibration& calib, int width, int height);

}  // namespace s3d::geometry
