#pragma once
// The real stereo scenes of ../shared/data/stereo (see its README) and the two matchers compared on them:
// s3d's SGM (CPU backend) and OpenCV's cv::StereoSGBM (3-way and HH modes), run in the same process on
// the same grey images with the same disparity range.
#include <string>
#include <vector>

#include "s3d/io/image.hpp"
#include "s3d/io/stereo_eval.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::accuracy {

struct Scene {
  std::string name;         ///< e.g. middlebury2003/cones
  std::string left, right;  ///< relative to the data folder
  std::string gt;           ///< left-view ground truth
  double gt_scale;          ///< d = v / scale for integer GT (0 = PFM / KITTI default)
  int disparities;          ///< D used for both matchers (a multiple of 16 for SGBM)
  bool kitti;               ///< report D1
  std::string right_gt;     ///< right-view GT (Reindeer): a nonocc mask is derived by a GT cross-check
};

/// Every scene of ../shared/data/stereo, in the README's order.
const std::vector<Scene>& scenes();

struct LoadedScene {
  io::ImageU8 left, right;
  io::ImageF gt;
  std::vector<stereo::EvalMask> masks;  ///< Middlebury's nonocc/all/disc, or derived nonocc; empty = all GT
};

/// Loads a scene from `data_dir`. @throws s3d::Error
LoadedScene load(const Scene& scene, const std::string& data_dir);

/// s3d SGM on the CPU.
io::ImageF run_ours(const LoadedScene& s, const stereo::SgmParams& params, double* seconds = nullptr);

enum class SgbmMode { kThreeWay, kHH };
/// cv::StereoSGBM in its standard configuration (OpenCV's documentation and stereo_match sample): block
/// `block` (3 by default), P1 = 8*block^2, P2 = 32*block^2, uniquenessRatio 10, speckleWindowSize 100 with
/// speckleRange 2 (OpenCV multiplies speckleRange by 16 itself: 2 px), disp12MaxDiff 1, preFilterCap 63, on
/// the same grey images; minDisparity 0, numDisparities = D. Invalid -> +inf.
io::ImageF run_sgbm(const LoadedScene& s, int disparities, SgbmMode mode, double* seconds = nullptr, int block = 3);

/// OpenCV's version string (CV_VERSION).
std::string opencv_version();

/// The columns where every disparity of [0, D) has a match inside the right image: x >= D. SGBM leaves
/// x < D empty; evaluating both matchers over x >= D compares them on the range that exists.
stereo::EvalOptions fair_columns(int width, int disparities);

}  // namespace s3d::accuracy
