// Boxes drawn on an image and a cloud seen from above (s3d/io/overlays.hpp): where the colours land, what
// stays untouched, the faint (suppressed) style, rotated boxes, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/io/overlays.hpp"

namespace s3d::io {
namespace {

std::array<int, 3> rgb_at(const ImageU8& img, int x, int y) {
  const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
  return {img.data[i], img.data[i + 1], img.data[i + 2]};
}

int distance(const std::array<int, 3>& a, const std::array<std::uint8_t, 3>& b) {
  return std::abs(a[0] - b[0]) + std::abs(a[1] - b[1]) + std::abs(a[2] - b[2]);
}

ImageU8 grey_image(int w, int h, std::uint8_t value) { return ImageU8(w, h, 1, value); }

TEST(DrawBoxes, KeptBoxIsOutlinedInItsClassColourWithALabel) {
  BoxDrawing box;
  box.box = {20, 30, 80, 70, 0};
  box.colour = 3;
  box.label = "cat 0.91";
  const ImageU8 out = draw_boxes(grey_image(120, 90, 128), {box});
  ASSERT_EQ(out.width, 120);
  ASSERT_EQ(out.height, 90);
  ASSERT_EQ(out.channels, 3);
  const auto colour = palette_colour(3);
  EXPECT_LT(distance(rgb_at(out, 20, 50), colour), 30) << "left edge";
  EXPECT_LT(distance(rgb_at(out, 80, 50), colour), 30) << "right edge";
  EXPECT_LT(distance(rgb_at(out, 50, 70), colour), 30) << "bottom edge";
  EXPECT_EQ(rgb_at(out, 50, 50), (std::array<int, 3>{128, 128, 128})) << "inside";
  EXPECT_EQ(rgb_at(out, 100, 50), (std::array<int, 3>{128, 128, 128})) << "outside";
  // The label's tab sits above the top-left corner, in the box's colour, with white text on it.
  int tab = 0, white = 0;
  for (int y = 12; y < 30; ++y)
    for (int x = 20; x < 60; ++x) {
      tab += distance(rgb_at(out, x, y), colour) < 30;
      white += rgb_at(out, x, y)[0] > 200 && rgb_at(out, x, y)[1] > 200 && rgb_at(out, x, y)[2] > 200;
    }
  EXPECT_GT(tab, 200);
  EXPECT_GT(white, 10);
}

TEST(DrawBoxes, FaintBoxIsBlendedAndUnlabelled) {
  BoxDrawing box;
  box.box = {10, 10, 50, 50, 0};
  box.colour = 0;
  box.faint = true;
  box.label = "ignored";
  const ImageU8 out = draw_boxes(grey_image(64, 64, 200), {box});
  const auto colour = palette_colour(0);
  const auto edge = rgb_at(out, 10, 30);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(edge[c], 0.4 * 200 + 0.6 * colour[c], 30) << c;
  EXPECT_EQ(rgb_at(out, 30, 5), (std::array<int, 3>{200, 200, 200})) << "no label tab above it";
}

TEST(DrawBoxes, RotatedBoxTurnsAboutItsCentre) {
  BoxDrawing box;
  box.box = {50, 40, 40, 10, M_PI / 2};  // 40 wide, 10 high, turned upright: x 45..55, y 20..60
  box.rotated = true;
  box.colour = 2;
  const ImageU8 out = draw_boxes(grey_image(100, 80, 0), {box});
  const auto colour = palette_colour(2);
  EXPECT_LT(distance(rgb_at(out, 45, 40), colour), 40);
  EXPECT_LT(distance(rgb_at(out, 55, 40), colour), 40);
  EXPECT_LT(distance(rgb_at(out, 50, 20), colour), 40);
  EXPECT_EQ(rgb_at(out, 30, 40), (std::array<int, 3>{0, 0, 0})) << "where the unturned box's edge would be";
}

TEST(DrawBoxes, ColourImagesKeepTheirColoursAndBoxesOutsideAreClipped) {
  ImageU8 img(40, 30, 3);
  for (std::size_t i = 0; i < img.data.size(); i += 3) img.data[i] = 250, img.data[i + 1] = 10, img.data[i + 2] = 20;
  BoxDrawing far;
  far.box = {-1e30, -1e30, -5e29, -5e29, 0};
  far.label = "off";
  const ImageU8 out = draw_boxes(img, {far});
  EXPECT_EQ(rgb_at(out, 20, 20), (std::array<int, 3>{250, 10, 20}));
  EXPECT_THROW(draw_boxes(ImageU8(4, 4, 4), {}), InvalidArgument);
  EXPECT_EQ(palette_colour(21), palette_colour(1));
  EXPECT_NE(palette_colour(0), palette_colour(1));
}

TEST(TopDown, PointsAreShadedAndMarksAreRed) {
  // A 10 x 5 rectangle of points (rows 0.1 apart, points 0.05 apart in a row); two marks at its right end.
  std::vector<float> xyz;
  for (int i = 0; i < 200; ++i)
    for (int j = 0; j <= 50; ++j) xyz.insert(xyz.end(), {i < 100 ? i * 0.05f : 5.f + (i - 100) * 0.05f, j * 0.1f, 1.f});
  const std::vector<float> marks{10.f, 0.f, 0.f, 10.f, 5.f, 0.f};
  const ImageU8 out = plot_top_down({xyz.data(), xyz.size() / 3}, {marks.data(), 2}, "cloud", 400);
  EXPECT_EQ(out.width, 400);
  EXPECT_EQ(out.height, 40 + 180 + 44);  // 360 px for 10 units: 5 units are 180 px
  // The plot area starts at x 20, y 40, 36 px a unit: the point (2.5, 2.5) is at (20 + 90, 40 + 179 - 90).
  const auto inside = rgb_at(out, 110, 129);
  EXPECT_LT(inside[0], 200);
  EXPECT_EQ(inside[0], inside[1]);
  const auto mark = rgb_at(out, 379, 219);  // (10, 0): the bottom-right corner
  EXPECT_GT(mark[0], 180);
  EXPECT_LT(mark[1], 80);
  EXPECT_EQ(rgb_at(out, 5, 130), (std::array<int, 3>{255, 255, 255})) << "the margin";
}

TEST(TopDown, EmptyOrNonFiniteCloudGivesABlankPicture) {
  const std::vector<float> nan{NAN, 0.f, 0.f};
  for (const PointsView<const float> cloud : {PointsView<const float>{}, PointsView<const float>{nan.data(), 1}}) {
    const ImageU8 out = plot_top_down(cloud, {}, "nothing", 300);
    EXPECT_EQ(out.width, 300);
    long dark = 0;
    for (int y = 40; y < out.height - 44; ++y)
      for (int x = 0; x < out.width; ++x) dark += rgb_at(out, x, y)[0] < 250;
    EXPECT_EQ(dark, 0);
  }
  EXPECT_THROW(plot_top_down({}, {}, "", 100), InvalidArgument);
}

}  // namespace
}  // namespace s3d::io
