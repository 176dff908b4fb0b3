// The trajectory and error-over-time pictures (s3d/io/plots.hpp): their size, that the data is drawn where
// the axes put it, the colour bar, and the argument checks; and the ZIP writer read back entry by entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/io/plots.hpp"
#include "s3d/io/zip.hpp"

namespace s3d::io {
namespace {

bool is_white(const ImageU8& img, int x, int y) {
  const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
  return img.data[i] == 255 && img.data[i + 1] == 255 && img.data[i + 2] == 255;
}

/// Pixels that are neither white nor grey (the estimate's colours).
long long coloured(const ImageU8& img, int x0, int x1) {
  long long n = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = x0; x < x1; ++x) {
      const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
      const int r = img.data[i], g = img.data[i + 1], b = img.data[i + 2];
      n += std::max({r, g, b}) - std::min({r, g, b}) > 60;
    }
  return n;
}

TEST(Plots, TrajectoryIsDrawnInItsMainPlaneWithAColourBar) {
  std::vector<Point3d> est, ref;
  std::vector<double> err;
  for (int i = 0; i <= 100; ++i) {  // a circle in a tilted plane
    const double a = i * 0.0628;
    est.push_back({std::cos(a), 0.5 * std::sin(a), 0.5 * std::sin(a)});
    ref.push_back({1.05 * std::cos(a), 0.5 * std::sin(a), 0.5 * std::sin(a)});
    err.push_back(0.05 * std::abs(std::cos(a)));
  }
  const ImageU8 img = plot_trajectory(est, err, ref, "title", "APE (m)");
  ASSERT_EQ(img.channels, 3);
  EXPECT_EQ(img.width, 1000);
  EXPECT_EQ(img.height, 800);
  EXPECT_GT(coloured(img, 81, 839), 500);    // the coloured estimate inside the plot area
  EXPECT_GT(coloured(img, 881, 904), 5000);  // the colour bar
  // The circle spans the plot: nothing is drawn around the area's centre, inside it; the top-left corner of
  // the picture is white.
  long long centre = 0;
  for (int y = 82 + 334 - 30; y < 82 + 334 + 30; ++y)
    for (int x = 80 + 380 - 30; x < 80 + 380 + 30; ++x) {
      const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
      centre += std::max({img.data[i], img.data[i + 1], img.data[i + 2]}) -
                    std::min({img.data[i], img.data[i + 1], img.data[i + 2]}) >
                60;
    }
  EXPECT_EQ(centre, 0);
  EXPECT_TRUE(is_white(img, 2, 2));
  const ImageU8 alone = plot_trajectory(est, {}, {}, "title", "");
  EXPECT_EQ(coloured(alone, 881, 904), 0);  // no values, no bar
  EXPECT_GT(coloured(alone, 81, 839), 200);
  EXPECT_THROW(plot_trajectory(est, {1.0}, ref, "t", "v"), InvalidArgument);
  // Degenerate input still gives a picture: no point, one point.
  EXPECT_EQ(plot_trajectory({}, {}, {}, "empty", "").width, 1000);
  EXPECT_EQ(plot_trajectory({{1.0, 2.0, 3.0}}, {0.5}, {}, "one", "v").width, 1000);
}

TEST(Plots, OverTimeDrawsTheValuesAndTheThreeLines) {
  std::vector<double> t, v;
  for (int i = 0; i < 50; ++i) t.push_back(0.1 * i), v.push_back(0.01 * (i % 7));
  const ImageU8 img = plot_over_time(t, v, 0.04, 0.03, 0.03, "title", "APE (m)");
  EXPECT_EQ(img.width, 1000);
  EXPECT_EQ(img.height, 500);
  EXPECT_GT(coloured(img, 81, 959), 1500);  // rmse / mean / median lines across the area
  EXPECT_THROW(plot_over_time(t, {1.0}, 0, 0, 0, "t", "v"), InvalidArgument);
  EXPECT_EQ(plot_over_time({}, {}, 0, 0, 0, "empty", "v").height, 500);
}

std::uint32_t le32(const std::string& s, std::size_t at) {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 8 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 16 |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3])) << 24;
}

TEST(Zip, StoredMembersSitWhereTheDirectorySays) {
  const std::string zip = zip_stored({{"a.json", "{}"}, {"b.npy", std::string("\x93NUMPY\0x", 8)}});
  ASSERT_GT(zip.size(), 22u);
  const std::size_t end = zip.size() - 22;
  EXPECT_EQ(le32(zip, end), 0x06054b50u);
  EXPECT_EQ(zip[end + 10], 2);  // members
  std::size_t dir = le32(zip, end + 16);
  for (const std::string name : {"a.json", "b.npy"}) {
    ASSERT_EQ(le32(zip, dir), 0x02014b50u);
    const std::uint32_t size = le32(zip, dir + 24), offset = le32(zip, dir + 42);
    const std::size_t name_length = static_cast<unsigned char>(zip[dir + 28]);
    EXPECT_EQ(zip.substr(dir + 46, name_length), name);
    ASSERT_EQ(le32(zip, offset), 0x04034b50u);
    EXPECT_EQ(zip.substr(offset + 30, name_length), name);
    EXPECT_EQ(zip.substr(offset + 30 + name_length, size),
              name == "a.json" ? std::string("{}") : std::string("\x93NUMPY\0x", 8));
    dir += 46 + name_length;
  }
  EXPECT_EQ(zip_stored({}).size(), 22u);
}

}  // namespace
}  // namespace s3d::io
