// Disparity -> depth and point cloud against hand-computed values; pinhole intrinsics of a stereo rig.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/geometry/disparity_geometry.hpp"

using namespace s3d::geometry;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

StereoCalibration rig() {
  StereoCalibration c;
  c.focal_px = 100.0;
  c.baseline_m = 0.5;
  c.cx = 2.0;
  c.cy = 1.0;
  c.has_principal_point = true;
  c.source = "test rig";
  return c;
}

}  // namespace

TEST(DisparityGeometry, DepthIsFocalTimesBaselineOverDisparity) {
  const std::vector<float> d = {10.0f, 0.0f, -1.0f, kInf, std::nanf(""), 25.0f};
  std::vector<float> z(6, 0.0f);
  depth_from_disparity(s3d::make_image_view(d.data(), 3, 2), rig(), s3d::make_image_view(z.data(), 3, 2));
  EXPECT_FLOAT_EQ(z[0], 5.0f);
  for (int i = 1; i < 5; ++i) EXPECT_TRUE(std::isinf(z[i])) << i;
  EXPECT_FLOAT_EQ(z[5], 2.0f);
  std::vector<float> small(2);
  EXPECT_THROW(
      depth_from_disparity(s3d::make_image_view(d.data(), 3, 2), rig(), s3d::make_image_view(small.data(), 2, 1)),
      s3d::InvalidArgument);
}

TEST(DisparityGeometry, CloudHasOnePointPerValidPixelWithColour) {
  // 5x3 map, two valid pixels: (4, 2) d = 50 -> Z = 1, X = (4 - 2) / 100, Y = (2 - 1) / 100; (0, 0) d = 10 -> Z = 5.
  std::vector<float> storage(15, kInf);
  storage[0] = 10.0f;
  storage[2 * 5 + 4] = 50.0f;
  const std::vector<float>& d = storage;
  std::vector<std::uint8_t> grey(15, 7);
  grey[14] = 200;
  const ColourView colour{grey.data(), 5, 3, 1};
  const s3d::PointCloud cloud = cloud_from_disparity(s3d::make_image_view(d.data(), 5, 3), rig(), &colour);
  ASSERT_EQ(cloud.size(), 2u);
  EXPECT_FLOAT_EQ(cloud.xyz[0], -2.0f * 5.0f / 100.0f);
  EXPECT_FLOAT_EQ(cloud.xyz[1], -1.0f * 5.0f / 100.0f);
  EXPECT_FLOAT_EQ(cloud.xyz[2], 5.0f);
  EXPECT_FLOAT_EQ(cloud.xyz[3], 0.02f);
  EXPECT_FLOAT_EQ(cloud.xyz[4], 0.01f);
  EXPECT_FLOAT_EQ(cloud.xyz[5], 1.0f);
  ASSERT_NE(cloud.find("green"), nullptr);
  EXPECT_EQ(cloud.find("green")->bytes, (std::vector<std::uint8_t>{7, 200}));  // grey replicated
  EXPECT_NO_THROW(cloud.validate());
  // max depth drops the far point; no colour gives white.
  const s3d::PointCloud near = cloud_from_disparity(s3d::make_image_view(d.data(), 5, 3), rig(), nullptr, 2.0f);
  ASSERT_EQ(near.size(), 1u);
  EXPECT_EQ(near.find("red")->bytes, (std::vector<std::uint8_t>{255}));
  const ColourView wrong{grey.data(), 3, 5, 1};
  EXPECT_THROW(cloud_from_disparity(s3d::make_image_view(d.data(), 5, 3), rig(), &wrong), s3d::DataError);
}

TEST(Intrinsics, LeftCameraOfAStereoRig) {
  const PinholeIntrinsics k = left_intrinsics(rig(), 640, 480);
  EXPECT_EQ(k.fx, 100.0);
  EXPECT_EQ(k.fy, 100.0);
  EXPECT_EQ(k.cx, 2.0);
  EXPECT_EQ(k.width, 640);
  StereoCalibration bare = rig();
  bare.has_principal_point = false;
  const PinholeIntrinsics centre = left_intrinsics(bare, 641, 481);
  EXPECT_EQ(centre.cx, 320.0);
  EXPECT_EQ(centre.cy, 240.0);
  PinholeIntrinsics bad = k;
  bad.fy = 0.0;
  EXPECT_THROW(bad.validate(), s3d::DataError);
  EXPECT_NO_THROW(k.validate());
}
