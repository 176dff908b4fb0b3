// The KITTI devkit's log-colour disparity error picture (io::disparity_error_image), pixel by pixel on small
// hand-made maps: the bins, the 3x3 painting, the dimmed occluded pixels, the border, the devkit's filling of
// invalid estimates, and the size checks.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/io/colormap.hpp"

namespace s3d::io {
namespace {

std::array<int, 3> rgb(const ImageU8& img, int x, int y) {
  const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
  return {img.data[i], img.data[i + 1], img.data[i + 2]};
}

TEST(DisparityErrorImage, BinsPaintingOcclusionAndBorder) {
  // 9 x 3: the ground truth only at x = 1, 4, 7 of the middle row (each paints its 3x3 block).
  ImageF gt(9, 3), est(9, 3);
  for (float& v : gt.data) v = kInvalid;
  for (float& v : est.data) v = 10.0f;
  gt.at(1, 1) = 10.0f;   // exact: the first bin
  gt.at(4, 1) = 10.2f;   // error 0.2: min(0.2 / 3, 20 * 0.2 / 10.2) = 0.067, the second bin [1/16, 1/8)
  gt.at(7, 1) = 100.0f;  // error 90: min(30, 18) = 18, the last bin [16, inf)
  const ImageU8 img = disparity_error_image(est, gt, {});
  ASSERT_EQ(img.channels, 3);
  for (int y = 0; y < 3; ++y) {
    EXPECT_EQ(rgb(img, 0, y), (std::array<int, 3>{49, 54, 149}));
    EXPECT_EQ(rgb(img, 3, y), (std::array<int, 3>{69, 117, 180}));
    EXPECT_EQ(rgb(img, 8, y), (std::array<int, 3>{165, 0, 38}));
  }
  // Occluded (mask 0): halved.
  std::vector<std::uint8_t> nonocc(gt.pixels(), 255);
  nonocc[1 * 9 + 4] = 0;
  EXPECT_EQ(rgb(disparity_error_image(est, gt, nonocc), 4, 1), (std::array<int, 3>{34, 58, 90}));
  // A ground-truth pixel on the border paints nothing; no ground truth is black.
  ImageF edge(5, 5);
  for (float& v : edge.data) v = kInvalid;
  edge.at(0, 2) = 10.0f;
  ImageF flat(5, 5);
  for (float& v : flat.data) v = 10.0f;
  const ImageU8 none = disparity_error_image(flat, edge, {});
  for (std::uint8_t v : none.data) EXPECT_EQ(v, 0);
}

TEST(DisparityErrorImage, InvalidEstimatesAreFilledAsTheDevkitDoes) {
  // One row: 20 [gap] 30: the gap takes the smaller neighbour (20), so a ground truth of 20 there is exact.
  ImageF gt(7, 3), est(7, 3);
  for (float& v : gt.data) v = kInvalid;
  for (int x = 0; x < 7; ++x)
    for (int y = 0; y < 3; ++y) est.at(x, y) = x < 3 ? 20.0f : 30.0f;
  est.at(3, 1) = kInvalid;
  est.at(4, 1) = std::nanf("");
  gt.at(3, 1) = 20.0f;
  EXPECT_EQ(rgb(disparity_error_image(est, gt, {}), 3, 1), (std::array<int, 3>{49, 54, 149}));
  // No estimate at all: the largest error.
  ImageF nothing(7, 3);
  for (float& v : nothing.data) v = kInvalid;
  EXPECT_EQ(rgb(disparity_error_image(nothing, gt, {}), 3, 1), (std::array<int, 3>{165, 0, 38}));
  EXPECT_THROW(disparity_error_image(ImageF(6, 3), gt, {}), InvalidArgument);
  EXPECT_THROW(disparity_error_image(est, gt, std::vector<std::uint8_t>(5, 255)), InvalidArgument);
}

}  // namespace
}  // namespace s3d::io
