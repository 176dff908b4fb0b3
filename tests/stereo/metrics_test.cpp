// Disparity metrics (s3d/stereo/metrics.hpp): both conventions, masks, column ranges, size mismatch.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/stereo/metrics.hpp"

using namespace s3d::stereo;

namespace {
constexpr float kInvalid = std::numeric_limits<float>::infinity();
}  // namespace

TEST(ValidPercent, FinitePixelsOfTheWholeMapRowPitchRespected) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // 3 x 2 inside rows of pitch 4; the padding column (inf) is not part of the map.
  std::vector<float> data{1.f, inf, 2.f, inf, nan, 0.f, -1.f, inf};
  const s3d::ImageView<const float> view{data.data(), 3, 2, 4};
  EXPECT_DOUBLE_EQ(valid_percent(view), 100.0 * 4 / 6);
  EXPECT_TRUE(std::isnan(valid_percent(s3d::ImageView<const float>{})));
}

TEST(Eval, CountsBothConventionsOverMasksAndColumns) {
  // 4x2 image: GT row 0 = 10 everywhere, row 1 = 20 except an unknown (0) pixel.
  const std::vector<float> gt = {10, 10, 10, 10, 20, 20, 20, 0};
  const std::vector<float> est = {10.5f, 11.5f, 13.0f,    kInvalid,  // errors 0.5, 1.5, 3.0, invalid
                                  20.0f, 24.0f, kInvalid, 5.0f};     // 0, 4 (> 3 and > 5% of 20), invalid, (no GT)
  const auto gt_view = s3d::make_image_view(gt.data(), 4, 2);
  const auto est_view = s3d::make_image_view(est.data(), 4, 2);
  const EvalResult r = evaluate_disparity(est_view, gt_view, {});
  ASSERT_EQ(r.regions.size(), 1u);
  const RegionErrors& e = r.regions[0];
  EXPECT_EQ(e.region, "all");
  EXPECT_EQ(e.gt_pixels, 7u);
  EXPECT_EQ(e.estimated, 5u);
  EXPECT_DOUBLE_EQ(e.bad1_est, 100.0 * 3 / 5);  // 1.5, 3, 4
  EXPECT_DOUBLE_EQ(e.bad2_est, 100.0 * 2 / 5);  // 3, 4
  EXPECT_DOUBLE_EQ(e.d1_est, 100.0 * 1 / 5);    // 4 (3.0 is not > 3)
  EXPECT_DOUBLE_EQ(e.bad2_all, 100.0 * 4 / 7);
  EXPECT_DOUBLE_EQ(e.d1_all, 100.0 * 3 / 7);
  EXPECT_DOUBLE_EQ(e.avg_err_est, (0.5 + 1.5 + 3.0 + 0.0 + 4.0) / 5);
  EXPECT_DOUBLE_EQ(r.density, 100.0 * 6 / 8);
  // Masks and a column range.
  const EvalMask top{"top", {1, 1, 1, 1, 0, 0, 0, 0}};
  const EvalResult m = evaluate_disparity(est_view, gt_view, {top}, EvalOptions{1, 3});
  ASSERT_NE(m.find("top"), nullptr);
  EXPECT_EQ(m.find("top")->gt_pixels, 2u);
  EXPECT_DOUBLE_EQ(m.find("top")->bad2_all, 50.0);
  EXPECT_EQ(m.find("nonocc"), nullptr);
  const std::vector<float> small(6, 1.0f);
  EXPECT_THROW(evaluate_disparity(s3d::make_image_view(small.data(), 3, 2), gt_view, {}), s3d::DataError);
}
