#pragma once
// Stereo calibration for disparity -> depth / 3-D points, from the files rectified stereo rigs ship with.
//
// Every source is reduced to geometry::StereoCalibration (s3d/geometry/camera.hpp): the pinhole model of the
// rectified LEFT camera and a baseline. Single-camera intrinsics (depth images) are PinholeIntrinsics.
#include <string>

#include "s3d/geometry/camera.hpp"

namespace s3d::io {

using geometry::PinholeIntrinsics;
using geometry::StereoCalibration;

/// Reads a calibration, detecting the format from the content:
/// - KITTI rectified projections: `P_rect_02:` and `P_rect_03:` (calib_cam_to_cam.txt, or this project's
///   data `Calib.txt` where the 12 numbers follow on the next lines), or `P2:` / `P3:` (object/odometry).
///   f = P2[0][0], cx = P2[0][2], cy = P2[1][2], baseline = (P2[0][3] - P3[0][3]) / f, doffs = P3[0][2] - cx.
///   Without P2/P3, KITTI odometry's grey pair `P0:` / `P1:` the same way; and a KITTI odometry calib.txt
///   without labels: exactly two lines of 12 numbers, P0 (left) then P1 (right), which must be a rectified
///   pair (third rows 0 0 1 t, no skew, equal focal lengths and cy, the right camera's P[0][3] the smaller).
/// - An OpenCV 4x4 reprojection matrix Q as 16 numbers of text (`Q.dat`): cx = -Q03, cy = -Q13,
///   f = Q23, baseline = 1 / |Q32|, doffs = Q33 / Q32.
/// - OpenCV FileStorage `.yml/.yaml/.xml` holding `Q`, or `P1` and `P2` (stereoRectify's names), or
///   `focal_px` and `baseline_m` (+ optional `cx`, `cy`). Read by s3d's own strict parser, not OpenCV's (which
///   is not safe on hostile files): top-level numbers and opencv-matrix entries of at most 16x16; other
///   entries are skipped; errors name the line.
/// - Middlebury 2014 `calib.txt` (`cam0=[f 0 cx; 0 f cy; 0 0 1]`, `cam1=`, `doffs=`, `baseline=` in mm).
/// - `key=value` text (separators `=` or `:`, whitespace or commas between pairs) with `focal_px` (or `f`,
///   `focal`) and `baseline_m` (or `b`, `baseline`), optional `cx`, `cy`, `doffs`.
/// When `spec` is not an existing file but reads as such key=value pairs (`f=721.5,b=0.54`) it is parsed
/// inline. @throws IoError (unreadable), DataError (no known format, or focal/baseline not positive).
StereoCalibration read_calibration(const std::string& spec);

/// TUM RGB-D's depth camera, the spec `tum`: its depth images are registered to the colour camera by the
/// OpenNI driver, and the benchmark converts every sequence's depth to points with fx = fy = 525, cx = 319.5,
/// cy = 239.5 at 640 x 480 (https://vision.in.tum.de/data/datasets/rgbd-dataset/intrinsic_calibration). Its
/// colour cameras' calibrations (fr1: 517.3, 516.5, 318.6, 255.3) describe the unregistered colour images.
constexpr const char* kTumDepthIntrinsics = "tum";
PinholeIntrinsics tum_depth_intrinsics();

/// Reads pinhole intrinsics of one camera for a `width` x `height` image (0 = unknown), from:
/// - `tum` (kTumDepthIntrinsics; a file of that name is `./tum`): tum_depth_intrinsics, for 640 x 480 images only;
/// - "fx fy cx cy" as four numbers of text, alone or on the line after a `#` comment (TUM RGB-D / ICL-NUIM);
/// - a 3x3 camera matrix K as nine numbers, no skew, last row 0 0 1 (7-Scenes `camera-intrinsics.txt`);
/// - key=value pairs (`fx=525 fy=525 cx=319.5 cy=239.5`, optional `width`, `height`), inline or in a file;
/// - any stereo calibration `read_calibration` accepts (its left camera, fx = fy = focal_px).
/// @throws IoError (unreadable), DataError (no known form, skew, or non-positive focal lengths).
PinholeIntrinsics read_intrinsics(const std::string& spec, int width = 0, int height = 0);

/// `k` as a 3x3 camera matrix in text, as 7-Scenes' `camera-intrinsics.txt` holds it (three lines `fx 0 cx`,
/// `0 fy cy`, `0 0 1`); each number with the fewest digits that read back as the same double, so that
/// read_intrinsics gives `k`'s values exactly.
std::string format_camera_matrix(const PinholeIntrinsics& k);

/// `v` with the fewest significant digits (at most 17) that read back as the same double: 718.856, not
/// 718.85599999999999. Non-finite values as printf writes them.
std::string shortest_number(double v);

}  // namespace s3d::io
