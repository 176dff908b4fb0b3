// Stereo dataset naming (s3d/io/stereo_datasets.hpp) on fake KITTI and Middlebury folders, and decoding an
// image from its bytes (read_file_bytes + decode_grey16) against reading it from its path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/stereo_datasets.hpp"

namespace fs = std::filesystem;

namespace s3d::io {
namespace {

class StereoDatasets : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d-datasets-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const fs::path& relative, const std::string& text = "") {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative) << text;
  }
  std::string at(const fs::path& relative) const { return (dir_ / relative).string(); }
  fs::path dir_;
};

TEST_F(StereoDatasets, KittiFolderPairsNamesGroundTruthAndCalibration) {
  touch("image_2/000001_10.png");
  touch("image_3/000001_10.png");
  touch("image_2/000000_10.png");
  touch("image_3/000000_10.png");
  touch("image_2/000002_10.png");  // no right view: an item that says so (it fails alone, never silently dropped)
  touch("image_2/notes.txt");
  touch("disp_noc_0/000000_10.png");
  touch("disp_occ_0/000000_10.png");  // preferred over disp_noc_0
  touch("calib_cam_to_cam/000001.txt");
  const auto items = stereo_dataset_items(dir_.string(), 0.0);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[2]["unpaired"],
            at("image_2/000002_10.png") + ": no right image (" + at("image_3/000002_10.png") + " is missing)");
  EXPECT_FALSE(items[0].contains("unpaired"));
  EXPECT_EQ(items[0]["name"], "000000_10");
  EXPECT_EQ(items[0]["left"], at("image_2/000000_10.png"));
  EXPECT_EQ(items[0]["right"], at("image_3/000000_10.png"));
  EXPECT_EQ(items[0]["gt"], at("disp_occ_0/000000_10.png"));
  EXPECT_FALSE(items[0].contains("calib"));
  EXPECT_EQ(items[1]["name"], "000001_10");
  EXPECT_FALSE(items[1].contains("gt"));
  EXPECT_EQ(items[1]["calib"], at("calib_cam_to_cam/000001.txt"));
}

TEST_F(StereoDatasets, MiddleburyScenesScaleAndMasks) {
  touch("cones/imL.png");
  touch("cones/imR.png");
  touch("cones/groundtruth.png");
  touch("cones/info.txt", "4\n");
  touch("cones/disc.png");
  touch("cones/nonocc.png");
  touch("reindeer/view1.png");
  touch("reindeer/view5.png");
  touch("reindeer/disp1.png");
  touch("empty/readme.md");
  // Subfolders in name order; view1/view5's 8-bit gt only with a scale.
  auto items = stereo_dataset_items(dir_.string(), 0.0);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0]["name"], "cones");
  EXPECT_EQ(items[0]["gt"], at("cones/groundtruth.png"));
  EXPECT_EQ(items[1]["name"], "reindeer");
  EXPECT_FALSE(items[1].contains("gt"));
  items = stereo_dataset_items(at("reindeer"), 2.0);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["gt"], at("reindeer/disp1.png"));
  EXPECT_EQ(items[0]["gt_scale"], 2.0);

  EXPECT_EQ(middlebury_gt_scale(at("cones/groundtruth.png")), 4.0);
  EXPECT_EQ(middlebury_gt_scale(at("reindeer/disp1.png")), 0.0);
  const auto masks = middlebury_mask_files(at("cones/groundtruth.png"));
  ASSERT_EQ(masks.size(), 2u);  // nonocc, all, disc order; all.png is absent
  EXPECT_EQ(masks[0].first, "nonocc");
  EXPECT_EQ(masks[0].second, at("cones/nonocc.png"));
  EXPECT_EQ(masks[1].first, "disc");
  EXPECT_THROW(stereo_dataset_items(at("empty"), 0.0), DataError);
}

TEST_F(StereoDatasets, DecodingBytesEqualsReadingThePath) {
  ImageU16 wide(31, 7);
  ImageU8 narrow(31, 7);
  for (std::size_t i = 0; i < wide.data.size(); ++i) {
    wide.data[i] = static_cast<std::uint16_t>(i * 977);
    narrow.data[i] = static_cast<std::uint8_t>(i * 13);
  }
  write_image(at("w.png"), wide);
  write_image(at("n.png"), narrow);
  for (const char* name : {"w.png", "n.png"}) {
    int bits_path = 0, bits_bytes = 0;
    const ImageU16 from_path = read_grey16(at(name), &bits_path);
    const ImageU16 from_bytes = decode_grey16(read_file_bytes(at(name)), name, &bits_bytes);
    EXPECT_EQ(from_bytes.width, from_path.width);
    EXPECT_EQ(from_bytes.height, from_path.height);
    EXPECT_EQ(from_bytes.data, from_path.data) << name;
    EXPECT_EQ(bits_bytes, bits_path) << name;
  }
  touch("junk.png", "not an image");
  try {
    decode_grey16(read_file_bytes(at("junk.png")), "junk.png");
    FAIL() << "junk decoded";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("junk.png: ", 0), 0u) << e.what();
  }
  EXPECT_THROW(read_file_bytes(at("absent.png")), IoError);
}

}  // namespace
}  // namespace s3d::io
