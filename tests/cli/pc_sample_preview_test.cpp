// pc-sample --emit preview end to end: the top-down picture of a known grid cloud, with the samples (fps) or
// the voxels' points (voxel) in red where the plane's scale puts them; alone or beside the samples; and the
// outputs it cannot take, each failing with no file left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "s3d/io/image.hpp"

#ifndef S3D_PC_SAMPLE_EXE
#error "S3D_PC_SAMPLE_EXE must name the pc-sample executable"
#endif

#include "command_test_util.hpp"

namespace fs = std::filesystem;

namespace {

using s3d::test::shell_quote;
using Result = s3d::test::CommandResult;

class PcSamplePreview : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d_pc_preview_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A 10 x 5 grid in the plane z = 0, points 0.5 apart: 21 x 11, row 0 at (0, 0).
    std::ofstream ply(dir_ / "grid.ply");
    ply << "ply\nformat ascii 1.0\nelement vertex " << 21 * 11 << "\nproperty float x\nproperty float y\n"
        << "property float z\nend_header\n";
    for (int j = 0; j <= 10; ++j)
      for (int i = 0; i <= 20; ++i) ply << i * 0.5 << " " << j * 0.5 << " 0\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run(const std::string& args) const {
    return s3d::test::run_command("cd " + shell_quote(dir_.string()) + " && " + shell_quote(S3D_PC_SAMPLE_EXE) + " " +
                                      args + " --device cpu grid.ply",
                                  dir_);
  }
  static bool red(const s3d::io::ImageU8& img, int x, int y) {
    const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
    return img.data[i] > 180 && img.data[i + 1] < 90 && img.data[i + 2] < 90;
  }

  fs::path dir_;
};

// 800 px wide: 760 px for the 10 units of x (76 px a unit), 380 px for y; the plot starts at (20, 40).
TEST_F(PcSamplePreview, FpsSamplesAreMarkedWhereTheyLie) {
  Result r = run("fps -n 2 --emit cloud,preview -o s.ply");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "s.ply"));
  const s3d::io::ImageU8 img = s3d::io::read_rgb8((dir_ / "s.preview.png").string());
  ASSERT_EQ(img.width, 800);
  ASSERT_EQ(img.height, 40 + 380 + 44);
  EXPECT_TRUE(red(img, 20, 419)) << "the start, (0, 0)";
  EXPECT_TRUE(red(img, 779, 40)) << "the farthest point, (10, 5)";
  EXPECT_FALSE(red(img, 400, 230)) << "the middle: points, no sample";

  Result alone = run("fps -n 2 --emit preview -o only.png");
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_EQ(s3d::test::slurp(dir_ / "only.png"), s3d::test::slurp(dir_ / "s.preview.png"));
  EXPECT_FALSE(fs::exists(dir_ / "only.ply"));
}

TEST_F(PcSamplePreview, VoxelMeansAreMarked) {
  Result r = run("voxel --voxel-size 5 --emit voxels,preview -o v.npy");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "v.npy"));
  EXPECT_TRUE(fs::exists(dir_ / "v.features.npy"));
  const s3d::io::ImageU8 img = s3d::io::read_rgb8((dir_ / "v.preview.png").string());
  // The voxel [0, 5) x [0, 5) holds x, y in {0, 0.5, ..., 4.5}: its mean (2.25, 2.25) is at (20 + 171, 419 - 171).
  EXPECT_TRUE(red(img, 191, 248));
  EXPECT_FALSE(red(img, 20, 419)) << "a corner point is not a voxel's mean";
}

TEST_F(PcSamplePreview, OutputsItCannotTakeFailWithNoFile) {
  const struct {
    const char* args;
    int code;
  } cases[] = {{"fps -n 2 --emit cloud,preview -o -", 1},
               {"fps -n 2 --emit preview -o x.ply", 1},
               {"fps -n 2 --emit cloud,indices -o x.ply", 2},
               {"voxel --voxel-size 1 --emit pictures -o x.ply", 2}};
  for (const auto& c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << ": " << r.err;
    EXPECT_EQ(r.err_lines().size(), 1u) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "x.ply")) << c.args;
    EXPECT_FALSE(fs::exists(dir_ / "x.preview.png")) << c.args;
  }
}

}  // namespace
