#pragma once
// The camera's motion between two RGB-D frames from matched image features: ORB corners and descriptors
// (Rublee et al., "ORB: an efficient alternative to SIFT or SURF", ICCV 2011) matched by Hamming distance with
// Lowe's ratio test, the first frame's matches lifted to 3-D by its depth, and the pose of the second camera
// found by PnP inside RANSAC. Dense ICP converges only from a start within its basin; this finds a start where
// nothing else gives one (the first step of a sequence: a car already moving 1 m a frame). Part of
// s3d::fusion_features (OpenCV); s3d::fusion itself does not need it. This header needs no CUDA or OpenCV.
#include <cstdint>
#include <string>

#include <Eigen/Geometry>

#include "s3d/core/image.hpp"
#include "s3d/fusion/params.hpp"

namespace s3d::fusion {

struct FeatureMotionParams {
  int features = 2000;           ///< ORB corners per image, at most
  float ratio = 0.8f;            ///< a match's distance below this times the second best's (Lowe's test)
  float reprojection_px = 2.0f;  ///< RANSAC inlier threshold
  int min_inliers = 30;          ///< fewer: no motion (a guess from a handful of points is not one)
  float min_depth = 0.0f;        ///< metres: a match's depth must lie in (min_depth, max_depth]
  float max_depth = 0.0f;        ///< 0 = no limit
  /// @throws InvalidArgument naming the field.
  void validate() const;
};

struct FeatureMotion {
  bool ok = false;
  /// The second camera's pose in the first camera's frame (x_first = motion * x_second), when ok.
  Eigen::Isometry3d motion = Eigen::Isometry3d::Identity();
  int matches = 0;     ///< ratio-test matches with a valid depth in the first frame
  int inliers = 0;     ///< of the RANSAC pose
  std::string reason;  ///< why there is no motion (empty when ok)
};

/// `from_rgb`, `to_rgb`: interleaved RGB (3 channels) of the same size as `from_depth` (metres, 0 / NaN /
/// inf invalid); `camera`: the depth's (and images') intrinsics. Deterministic: the same frames give the same
/// motion. Never throws for frames without texture or depth: `ok` is false with a reason.
/// @throws InvalidArgument for images of another size or channel count, or bad params.
FeatureMotion estimate_feature_motion(const Image<std::uint8_t>& from_rgb, const Image<float>& from_depth,
                                      const Image<std::uint8_t>& to_rgb, const CameraIntrinsics& camera,
                                      const FeatureMotionParams& params = {});

}  // namespace s3d::fusion
