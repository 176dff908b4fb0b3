#pragma once
// Stereo calibration for disparity -> depth / 3-D points, from the files rectified stereo rigs ship with.
//
// Every source is reduced to one pinhole model of the rectified LEFT camera (OpenCV camera axes: x right,
// y down, z forward) and a baseline:
//     Z = focal_px * baseline / (d + doffs),   X = (x - cx) * Z / focal_px,   Y = (y - cy) * Z / focal_px
// with d the left-view disparity in pixels and doffs = cx_right - cx_left (0 for most rigs; Middlebury's
// `doffs`). Depth is in the unit of the baseline: metres for KITTI files and `baseline_m`; Middlebury's
// millimetre baselines are converted to metres. This is the same as OpenCV's reprojectImageTo3D with
//     Q = [1 0 0 -cx; 0 1 0 -cy; 0 0 0 f; 0 0 1/B doffs/B].
#include <string>

#include "s3d/io/image.hpp"

namespace s3d::io {

struct StereoCalibration {
  double focal_px = 0.0;    ///< focal length of the rectified pair, pixels (> 0)
  double baseline_m = 0.0;  ///< distance between the optical centres, metres (> 0)
  double cx = 0.0;          ///< principal point of the left camera, pixels (when `has_principal_point`)
  double cy = 0.0;
  double doffs = 0.0;       ///< cx_right - cx_left, pixels
  /// False for a bare focal + baseline: the image centre ((W-1)/2, (H-1)/2) is then used.
  bool has_principal_point = false;
  std::string source;       ///< the file (or inline text) it was read from
  std::string format;       ///< kitti, Q, yaml, middlebury, pairs, inline (for reports)

  /// Checks focal_px > 0 and baseline_m > 0 (finite). @throws DataError naming `source`.
  void validate() const;
  /// Depth (metres) of disparity `d` (pixels); +inf when d is not finite or d + doffs <= 0.
  float depth(float d) const;
};

/// Reads a calibration, detecting the format from the content:
/// - KITTI rectified projections: `P_rect_02:` and `P_rect_03:` (calib_cam_to_cam.txt, or this project's
///   data `Calib.txt` where the 12 numbers follow on the next lines), or `P2:` / `P3:` (object/odometry).
///   f = P2[0][0], cx = P2[0][2], cy = P2[1][2], baseline = (P2[0][3] - P3[0][3]) / f, doffs = P3[0][2] - cx.
/// - An OpenCV 4x4 reprojection matrix Q as 16 numbers of text (`Q.dat`): cx = -Q03, cy = -Q13,
///   f = Q23, baseline = 1 / |Q32|, doffs = Q33 / Q32.
/// - OpenCV FileStorage `.yml/.yaml/.xml` holding `Q`, or `P1` and `P2` (stereoRectify's names), or
///   `focal_px` and `baseline_m` (+ optional `cx`, `cy`).
/// - Middlebury 2014 `calib.txt` (`cam0=[f 0 cx; 0 f cy; 0 0 1]`, `cam1=`, `doffs=`, `baseline=` in mm).
/// - `key=value` text (separators `=` or `:`, whitespace or commas between pairs) with `focal_px` (or `f`,
///   `focal`) and `baseline_m` (or `b`, `baseline`), optional `cx`, `cy`, `doffs`.
/// When `spec` is not an existing file but reads as such key=value pairs (`f=721.5,b=0.54`) it is parsed
/// inline. @throws IoError (unreadable), DataError (no known format, or focal/baseline not positive).
StereoCalibration read_calibration(const std::string& spec);

/// Depth map (metres) of a disparity map (pixels). Invalid disparities -> kInvalid.
ImageF depth_from_disparity(const ImageF& disparity, const StereoCalibration& calib);

}  // namespace s3d::io
