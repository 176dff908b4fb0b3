// CPU sanity accuracy on real Middlebury scenes: bad-2.0 against the ground truth under bounds measured
// with the defaults, so accuracy regressions show. (The full table beside OpenCV StereoSGBM is the
// sgm-depth evaluation's; this only guards the library.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <random>

#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/stages.hpp"
#include "stereo_test_util.hpp"
#include "test_support.hpp"

namespace s3d::stereo {
namespace {

struct Scores {
  double bad2_all_invalid_wrong = 0;  ///< % of nonocc GT pixels wrong by > 2 px, invalid counted wrong
  double bad2_estimated = 0;          ///< % of estimated nonocc GT pixels wrong by > 2 px
  double density = 0;                 ///< % of nonocc GT pixels with an estimate
};

Scores evaluate(const std::filesystem::path& dir, double gt_scale, int disparities) {
  const cv::Mat l = cv::imread((dir / "imL.png").string(), cv::IMREAD_GRAYSCALE);
  const cv::Mat r = cv::imread((dir / "imR.png").string(), cv::IMREAD_GRAYSCALE);
  const cv::Mat gt = cv::imread((dir / "groundtruth.png").string(), cv::IMREAD_GRAYSCALE);
  const cv::Mat mask = cv::imread((dir / "nonocc.png").string(), cv::IMREAD_GRAYSCALE);
  EXPECT_FALSE(l.empty() || r.empty() || gt.empty() || mask.empty());
  SgmParams p;
  p.disparities = disparities;
  const SgmResult res =
      compute_sgm(Device(Device::Kind::kCpu), p,
                  ImageView<const std::uint8_t>{l.data, l.cols, l.rows, static_cast<std::ptrdiff_t>(l.step)},
                  ImageView<const std::uint8_t>{r.data, r.cols, r.rows, static_cast<std::ptrdiff_t>(r.step)});
  long total = 0, wrong = 0, estimated = 0, wrong_est = 0;
  for (int y = 0; y < l.rows; ++y)
    for (int x = 0; x < l.cols; ++x) {
      const int g = gt.at<std::uint8_t>(y, x);
      if (g == 0 || mask.at<std::uint8_t>(y, x) != 255) continue;
      ++total;
      const float d = res.disparity[y * l.cols + x];
      if (!is_valid_disparity(d)) {
        ++wrong;
        continue;
      }
      ++estimated;
      const bool bad = std::abs(d - g / gt_scale) > 2.0;
      wrong += bad;
      wrong_est += bad;
    }
  Scores s;
  s.bad2_all_invalid_wrong = 100.0 * wrong / std::max(total, 1L);
  s.bad2_estimated = 100.0 * wrong_est / std::max(estimated, 1L);
  s.density = 100.0 * estimated / std::max(total, 1L);
  return s;
}

TEST(SgmAccuracy, Tsukuba) {
  S3D_REQUIRE_DATA(dir, "stereo/middlebury2001/tsukuba");
  const Scores s = evaluate(dir, 16.0, 32);
  std::printf("tsukuba nonocc: bad-2.0 %.2f%% (invalid wrong), %.2f%% (estimated), density %.1f%%\n",
              s.bad2_all_invalid_wrong, s.bad2_estimated, s.density);
  // measured with the defaults (uniqueness 0, occlusion fill; docs/ACCURACY.md)
  EXPECT_GT(s.density, 99.0);                // measured 99.6
  EXPECT_LT(s.bad2_all_invalid_wrong, 3.1);  // measured 2.76
  EXPECT_LT(s.bad2_estimated, 2.7);          // measured 2.36
}

TEST(SgmAccuracy, Cones) {
  S3D_REQUIRE_DATA(dir, "stereo/middlebury2003/cones");
  const Scores s = evaluate(dir, 4.0, 64);
  std::printf("cones nonocc: bad-2.0 %.2f%% (invalid wrong), %.2f%% (estimated), density %.1f%%\n",
              s.bad2_all_invalid_wrong, s.bad2_estimated, s.density);
  EXPECT_GT(s.density, 98.9);                // measured 99.4 with the defaults
  EXPECT_LT(s.bad2_all_invalid_wrong, 4.0);  // measured 3.67
  EXPECT_LT(s.bad2_estimated, 3.45);         // measured 3.12
}

// KITTI 2015 000005_10, D128: D1 (error > 3 px and > 5 %) over all GT pixels (sparse LiDAR, v/256).
TEST(SgmAccuracy, KittiD1) {
  S3D_REQUIRE_DATA(dir, "stereo/kitti2015/000005_10");
  const cv::Mat l = cv::imread((dir / "stereo_left.png").string(), cv::IMREAD_GRAYSCALE);
  const cv::Mat r = cv::imread((dir / "stereo_right.png").string(), cv::IMREAD_GRAYSCALE);
  const cv::Mat gt = cv::imread((dir / "gt_disparity.png").string(), cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(l.empty() || r.empty() || gt.empty());
  ASSERT_EQ(gt.type(), CV_16UC1);
  SgmParams p;
  p.disparities = 128;
  const SgmResult res =
      compute_sgm(Device(Device::Kind::kCpu), p,
                  ImageView<const std::uint8_t>{l.data, l.cols, l.rows, static_cast<std::ptrdiff_t>(l.step)},
                  ImageView<const std::uint8_t>{r.data, r.cols, r.rows, static_cast<std::ptrdiff_t>(r.step)});
  long total = 0, wrong = 0, estimated = 0, wrong_est = 0;
  for (int y = 0; y < l.rows; ++y)
    for (int x = 0; x < l.cols; ++x) {
      const double g = gt.at<std::uint16_t>(y, x) / 256.0;
      if (g <= 0) continue;
      ++total;
      const float d = res.disparity[y * l.cols + x];
      if (!is_valid_disparity(d)) {
        ++wrong;
        continue;
      }
      ++estimated;
      const double e = std::abs(d - g);
      const bool bad = e > 3.0 && e > 0.05 * g;
      wrong += bad;
      wrong_est += bad;
    }
  const double d1_all = 100.0 * wrong / total, d1_est = 100.0 * wrong_est / estimated;
  const double density = 100.0 * estimated / total;
  std::printf("kitti 000005_10: D1 %.2f%% (invalid wrong), %.2f%% (estimated), density %.1f%%\n", d1_all, d1_est,
              density);
  EXPECT_LT(d1_all, 22.0);   // measured 20.57 with the defaults (whole frame, left band included)
  EXPECT_LT(d1_est, 5.8);    // measured 5.42
  EXPECT_GT(density, 83.0);  // measured 84.0
}

// ---- CPU fast paths: the engine's shortcuts must not change a bit ----

const Device kCpuDev(Device::Kind::kCpu);

bool same_bits(const std::vector<float>& a, const std::vector<float>& b, int width, std::string* where) {
  if (a.size() != b.size()) {
    *where = "size";
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      *where = std::to_string(i % width) + "," + std::to_string(i / width) + ": " + std::to_string(a[i]) + " vs " +
               std::to_string(b[i]);
      return false;
    }
  return true;
}

// The 3x3 median's vectorised rank selection (interior rows) and the border pixels' median3x3_at against a
// stable sort of the valid values in raster order, bit for bit: +0.0 and -0.0 compare equal, so the element
// picked among equals must be the one the stable order puts at n/2.
TEST(SgmCpuFastPaths, MedianMatchesStablySortedValidValues) {
  for (float invalid : {0.0f, 0.1f, 0.6f}) {
    const int W = 97, H = 41;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> value(-20.0f, 60.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> d(static_cast<std::size_t>(W) * H);
    for (auto& v : d) {
      const float r = u(rng);
      v = r < invalid          ? kInvalidDisparity
          : r < invalid + 0.1f ? (r < invalid + 0.05f ? -0.0f : 0.0f)
                               : std::round(value(rng) * 4.0f) / 4.0f;  // ties too
    }
    const std::vector<float> got = stages::median3x3(kCpuDev, d, W, H);
    int signed_zeros = 0;
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        const float c = d[y * W + x];
        float want = c;
        if (is_valid_disparity(c)) {
          std::vector<float> v;
          for (int yy = std::max(y - 1, 0); yy <= std::min(y + 1, H - 1); ++yy)
            for (int xx = std::max(x - 1, 0); xx <= std::min(x + 1, W - 1); ++xx)
              if (is_valid_disparity(d[yy * W + xx])) v.push_back(d[yy * W + xx]);
          std::stable_sort(v.begin(), v.end());
          want = v[v.size() / 2];
        }
        signed_zeros += want == 0.0f && std::signbit(want);
        ASSERT_EQ(std::memcmp(&got[y * W + x], &want, sizeof want), 0)
            << x << "," << y << " invalid fraction " << invalid << ": " << got[y * W + x] << " vs " << want;
      }
    EXPECT_GT(signed_zeros, 0) << "the case of -0.0 among equals is exercised";
  }
}

// WTA without confidence (the second best is then skipped when uniqueness is 0) = WTA with it.
TEST(SgmCpuFastPaths, WtaWithoutConfidenceSameDisparities) {
  const int W = 75, H = 23, D = 48;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> dist(0, 3000);
  std::vector<std::uint16_t> vol(static_cast<std::size_t>(W) * H * D);
  for (auto& v : vol) v = static_cast<std::uint16_t>(dist(rng));
  for (int u : {0, 15}) {
    SgmParams p;
    p.disparities = D;
    p.min_disparity = -7;
    p.uniqueness = u;
    std::vector<float> with, without, conf;
    stages::wta(kCpuDev, vol, W, H, p, stages::View::kLeft, with, &conf);
    stages::wta(kCpuDev, vol, W, H, p, stages::View::kLeft, without, nullptr);
    std::string where;
    EXPECT_TRUE(same_bits(with, without, W, &where)) << "uniqueness " << u << " " << where;
  }
}

// A background at disparity 6 behind a textured rectangle at disparity 20 (right-view columns [60, 140),
// rows [15, 45)): the left view has a 14-pixel occlusion beside the rectangle's left edge, as a real scene.
void layered_pair(int w, int h, std::uint32_t seed, test::Image<std::uint8_t>& left, test::Image<std::uint8_t>& right) {
  const int kBack = 6, kFront = 20, x0 = 60, x1 = 140, y0 = 15, y1 = 45;
  const auto back = test::random_image<std::uint8_t>(w + kBack, h, seed);
  const auto front = test::random_image<std::uint8_t>(w, h, seed + 1);
  auto in_front = [&](int xr, int y) { return y >= y0 && y < y1 && xr >= x0 && xr < x1; };
  // right-view column xr shows the rectangle there, else the background point seen at left column xr + kBack
  auto right_at = [&](int xr, int y) {
    return in_front(xr, y) ? front.pixels[y * w + xr] : back.pixels[y * (w + kBack) + xr + kBack];
  };
  left = {w, h, std::vector<std::uint8_t>(static_cast<std::size_t>(w) * h)};
  right = left;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      right.pixels[y * w + x] = right_at(x, y);
      left.pixels[y * w + x] =
          in_front(x - kFront, y) ? front.pixels[y * w + x - kFront] : back.pixels[y * (w + kBack) + x];
    }
}

// The occlusion beside the rectangle (left columns [66, 80)) is invalid without the fill (the LR check
// finds no consistent right match) and takes the background's disparity with it; the rectangle and the
// background away from it keep their disparities.
TEST(SgmOcclusionFill, OccludedRunTakesTheBackground) {
  test::Image<std::uint8_t> l, r;
  layered_pair(203, 61, 33, l, r);
  SgmParams p;
  p.disparities = 48;
  const int W = l.width;
  auto count = [&](const SgmResult& res, int x0, int x1, float want, int* valid) {
    int near = 0;
    *valid = 0;
    for (int y = 18; y < 42; ++y)
      for (int x = x0; x < x1; ++x) {
        const float d = res.disparity[y * W + x];
        *valid += is_valid_disparity(d);
        near += is_valid_disparity(d) && std::fabs(d - want) <= 1.0f;
      }
    return near;
  };
  const int n_occluded = 24 * 14;
  p.fill = false;
  int valid_before = 0;
  count(compute_sgm(kCpuDev, p, l.view(), r.view()), 66, 80, 6.0f, &valid_before);
  EXPECT_LT(valid_before, n_occluded / 2);
  p.fill = true;
  const SgmResult filled = compute_sgm(kCpuDev, p, l.view(), r.view());
  int valid = 0;
  EXPECT_GE(count(filled, 66, 80, 6.0f, &valid), n_occluded * 9 / 10);
  EXPECT_GE(count(filled, 90, 150, 20.0f, &valid), 24 * 60 * 95 / 100);  // the rectangle
  EXPECT_GE(count(filled, 160, 200, 6.0f, &valid), 24 * 40 * 95 / 100);  // the background right of it
}

/// The right view's disparities from the left view's total volume, as LrMethod::kVolume defines them:
/// d_R(x_r) = the least S(x_r + min_d + d, d) over the left pixels that exist, the lowest d among equal sums;
/// none for the `edge` right pixels at the left edge.
std::vector<float> right_view_from_volume(const std::vector<std::uint16_t>& volume, int W, int H, int D, int min_d,
                                          int edge) {
  std::vector<float> right(static_cast<std::size_t>(W) * H, kInvalidDisparity);
  for (int y = 0; y < H; ++y)
    for (int xr = edge; xr < W; ++xr) {
      int best = -1, best_sum = 0;
      for (int d = 0; d < D; ++d) {
        const int x = xr + min_d + d;
        if (x < 0 || x >= W) continue;
        const int sum = volume[(static_cast<std::size_t>(y) * W + x) * D + d];
        if (best < 0 || sum < best_sum) {
          best = d;
          best_sum = sum;
        }
      }
      if (best >= 0) right[static_cast<std::size_t>(y) * W + xr] = static_cast<float>(best + min_d);
    }
  return right;
}

// The CPU engine (its own buffers and scheduling) = the per-stage CPU functions composed by hand.
TEST(SgmCpuFastPaths, EngineMatchesComposedStages) {
  test::Image<std::uint8_t> l, r;
  layered_pair(203, 61, 21, l, r);
  struct Case {
    int paths, uniqueness, min_d;
    bool lr, median, confidence;
    int speckle;
    bool fill;
    LrMethod lr_method = LrMethod::kRightSgm;
    int disparities = 48;  // 64, 128, 256: the AVX-512 byte sweep where the CPU has it
    int census_width = 9, census_height = 7;
  };
  const LrMethod vol = LrMethod::kVolume;
  for (const Case c :
       {Case{8, 0, 0, true, true, false, 100, false}, Case{4, 10, -5, true, true, true, 20, false},
        Case{8, 5, 3, false, false, true, 0, false}, Case{8, 0, -20, true, false, false, 50, false},
        Case{8, 8, 0, true, true, true, 100, true}, Case{4, 20, -5, true, false, false, 20, true},
        Case{8, 0, 0, true, false, false, 0, false, vol}, Case{4, 10, -5, true, true, true, 20, false, vol, 48, 5, 3},
        Case{8, 0, -20, true, false, false, 0, false, vol, 64}, Case{8, 0, 7, true, true, true, 100, true, vol, 128},
        Case{8, 0, 0, true, true, true, 100, true}}) {  // the last: the library's defaults
    SgmParams p;
    p.disparities = c.disparities;
    p.lr_method = c.lr_method;
    p.census_width = c.census_width;
    p.census_height = c.census_height;
    p.paths = c.paths;
    p.uniqueness = c.uniqueness;
    p.min_disparity = c.min_d;
    p.lr_check = c.lr;
    p.median = c.median;
    p.confidence = c.confidence;
    p.speckle_size = c.speckle;
    p.fill = c.fill;
    const int W = l.width, H = l.height;
    const SgmResult got = compute_sgm(kCpuDev, p, l.view(), r.view());
    const auto cl = stages::census(kCpuDev, l.view(), p.census, p.census_width, p.census_height);
    const auto cr = stages::census(kCpuDev, r.view(), p.census, p.census_width, p.census_height);
    std::vector<float> disp, conf, right;
    const std::vector<std::uint16_t> volume = stages::aggregate(kCpuDev, cl, cr, W, H, p, stages::View::kLeft);
    stages::wta(kCpuDev, volume, W, H, p, stages::View::kLeft, disp, c.confidence ? &conf : nullptr);
    if (c.lr && c.lr_method == LrMethod::kVolume) {
      right = right_view_from_volume(volume, W, H, p.disparities, p.min_disparity, p.census_width / 2);
      disp = stages::lr_check(kCpuDev, disp, right, W, H, p.lr_max_diff);
    } else if (c.lr) {
      stages::wta(kCpuDev, stages::aggregate(kCpuDev, cl, cr, W, H, p, stages::View::kRight), W, H, p,
                  stages::View::kRight, right, nullptr);
      disp = stages::lr_check(kCpuDev, disp, right, W, H, p.lr_max_diff);
    }
    if (c.median) disp = stages::median3x3(kCpuDev, disp, W, H);
    if (c.speckle > 0) disp = stages::speckle(kCpuDev, disp, W, H, p.speckle_size, p.speckle_range);
    const std::vector<float> before_fill = disp;
    if (c.fill) {
      disp = stages::fill_occlusions(kCpuDev, disp, W, H);
      int filled = 0;
      for (std::size_t i = 0; i < disp.size(); ++i)
        filled += !is_valid_disparity(before_fill[i]) && is_valid_disparity(disp[i]);
      EXPECT_GT(filled, 0) << "no occlusion filled: the case tests nothing";
    }
    std::string where;
    EXPECT_TRUE(same_bits(got.disparity, disp, W, &where))
        << "paths " << c.paths << " D " << c.disparities << " " << lr_method_name(c.lr_method) << ": " << where;
    if (c.confidence) {
      // the confidence is not filled: 0 wherever the map was invalid before the fill
      for (std::size_t i = 0; i < conf.size(); ++i)
        if (!is_valid_disparity(before_fill[i])) conf[i] = 0.0f;
      EXPECT_TRUE(same_bits(got.confidence, conf, W, &where)) << "confidence: " << where;
    }
  }
}

}  // namespace
}  // namespace s3d::stereo
