#include "scenes.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <opencv2/calib3d.hpp>
#include <opencv2/core.hpp>

#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::accuracy {

const std::vector<Scene>& scenes() {
  static const std::vector<Scene> kScenes = {
      {"middlebury2001/tsukuba", "middlebury2001/tsukuba/imL.png", "middlebury2001/tsukuba/imR.png",
       "middlebury2001/tsukuba/groundtruth.png", 16, 16, false, ""},
      {"middlebury2001/venus", "middlebury2001/venus/imL.png", "middlebury2001/venus/imR.png",
       "middlebury2001/venus/groundtruth.png", 8, 32, false, ""},
      {"middlebury2003/cones", "middlebury2003/cones/imL.png", "middlebury2003/cones/imR.png",
       "middlebury2003/cones/groundtruth.png", 4, 64, false, ""},
      {"middlebury2003/teddy", "middlebury2003/teddy/imL.png", "middlebury2003/teddy/imR.png",
       "middlebury2003/teddy/groundtruth.png", 4, 64, false, ""},
      {"middlebury2005/Reindeer", "middlebury2005/Reindeer/view1.png", "middlebury2005/Reindeer/view5.png",
       "middlebury2005/Reindeer/disp1.png", 2, 128, false, "middlebury2005/Reindeer/disp5.png"},
      {"kitti2015/000005_10", "kitti2015/000005_10/stereo_left.png", "kitti2015/000005_10/stereo_right.png",
       "kitti2015/000005_10/gt_disparity.png", 256, 128, true, ""},
      {"flyingthings3d/0006", "synthetic_flyingthings3d/0006/Left/0006.png",
       "synthetic_flyingthings3d/0006/Right/0006.png", "synthetic_flyingthings3d/0006/Disparity/0006.pfm", 0, 128,
       false, ""},
  };
  return kScenes;
}

LoadedScene load(const Scene& scene, const std::string& data_dir) {
  const fs::path root(data_dir);
  LoadedScene s;
  s.left = io::read_grey8((root / scene.left).string());
  s.right = io::read_grey8((root / scene.right).string());
  s.gt = io::read_disparity((root / scene.gt).string(), scene.gt_scale);
  s.masks = io::find_masks((root / scene.gt).string(), s.gt.width, s.gt.height);
  if (s.masks.empty() && !scene.right_gt.empty()) {
    // Occlusion from the two GT views: a left pixel is visible in the right view when the right GT at
    // x - d agrees with d within 1 px (the usual cross-check; Middlebury 2005 ships no masks).
    const io::ImageF right = io::read_disparity((root / scene.right_gt).string(), scene.gt_scale);
    stereo::EvalMask nonocc{"nonocc", std::vector<std::uint8_t>(s.gt.pixels(), 0)};
    stereo::EvalMask all{"all", std::vector<std::uint8_t>(s.gt.pixels(), 1)};
    for (int y = 0; y < s.gt.height; ++y)
      for (int x = 0; x < s.gt.width; ++x) {
        const float d = s.gt.at(x, y);
        if (!std::isfinite(d)) continue;
        const int xr = static_cast<int>(std::lround(x - d));
        if (xr < 0 || xr >= s.gt.width) continue;
        const float dr = right.at(xr, y);
        if (std::isfinite(dr) && std::fabs(dr - d) <= 1.0f)
          nonocc.mask[static_cast<std::size_t>(y) * s.gt.width + x] = 1;
      }
    s.masks = {nonocc, all};
  }
  return s;
}

io::ImageF run_ours(const LoadedScene& s, const stereo::SgmParams& params, double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  stereo::SgmResult r = stereo::compute_sgm(Device(Device::Kind::kCpu), params, s.left.cview(), s.right.cview());
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  io::ImageF d(r.width, r.height);
  d.data = std::move(r.disparity);
  return d;
}

io::ImageF run_sgbm(const LoadedScene& s, int disparities, SgbmMode mode, double* seconds, int block) {
  // speckleRange is in pixels: StereoSGBM::compute() passes 16 * speckleRange to filterSpeckles on its
  // 16x fixed-point map (OpenCV's documentation: "implicitly multiplied by 16"; 1 or 2 is normal).
  auto sgbm = cv::StereoSGBM::create(0, disparities, block, 8 * block * block, 32 * block * block, 1, 63, 10, 100, 2,
                                     mode == SgbmMode::kHH ? cv::StereoSGBM::MODE_HH : cv::StereoSGBM::MODE_SGBM_3WAY);
  const cv::Mat l(s.left.height, s.left.width, CV_8U, const_cast<std::uint8_t*>(s.left.data.data()));
  const cv::Mat r(s.right.height, s.right.width, CV_8U, const_cast<std::uint8_t*>(s.right.data.data()));
  cv::Mat disp16;
  const auto t0 = std::chrono::steady_clock::now();
  sgbm->compute(l, r, disp16);
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  io::ImageF d(s.left.width, s.left.height, 1, io::kInvalid);
  for (int y = 0; y < d.height; ++y)
    for (int x = 0; x < d.width; ++x) {
      const short v = disp16.at<short>(y, x);
      if (v >= 0) d.at(x, y) = v / 16.0f;  // invalid = (minDisparity - 1) * 16 = -16
    }
  return d;
}

std::string opencv_version() { return CV_VERSION; }

stereo::EvalOptions fair_columns(int width, int disparities) { return stereo::EvalOptions{disparities, width}; }

}  // namespace s3d::accuracy
