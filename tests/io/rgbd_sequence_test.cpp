// Depth sequences: TUM / 7-Scenes / plain folders and list files, depth frames in metres, bad frames.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/pfm.hpp"
#include "s3d/io/rgbd_sequence.hpp"
#include "test_support.hpp"

namespace s3d::io {
namespace {

namespace fs = std::filesystem;

class RgbdSequenceTest : public test::TempFolderTest {
 protected:
  void text(const std::string& name, const std::string& content) const {
    fs::create_directories(fs::path(path(name)).parent_path());
    std::ofstream(path(name)) << content;
  }
  /// A 4x3 16-bit depth PNG: pixel (x, y) = base + x + 10 y, with (0, 0) = 0 and (1, 0) = 65535.
  void depth_png(const std::string& name, int base, int width = 4, int height = 3) const {
    fs::create_directories(fs::path(path(name)).parent_path());
    ImageU16 img(width, height);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x) img.at(x, y) = static_cast<std::uint16_t>(base + x + 10 * y);
    img.at(0, 0) = 0;
    img.at(1, 0) = 65535;
    write_image(path(name), img);
  }
};

TEST_F(RgbdSequenceTest, TumFolderWithAssociatedRgb) {
  text("depth.txt",
       "# depth maps\n# file: 'x.bag'\n# timestamp filename\n"
       "1305031102.160407 depth/a.png\n1305031102.194330 depth/b.png\n");
  text("rgb.txt", "# colour\n# \n# timestamp filename\n1305031102.175304 rgb/a.png\n1305031102.211214 rgb/b.png\n");
  text("groundtruth.txt", "# gt\n");
  depth_png("depth/a.png", 1000);
  depth_png("depth/b.png", 2000);
  const auto seq = list_rgbd_sequence(dir_.string());
  EXPECT_EQ(seq.layout, "tum");
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_FALSE(seq.timestamps_from_index);
  EXPECT_DOUBLE_EQ(seq.frames[1].timestamp, 1305031102.194330);
  EXPECT_EQ(seq.frames[0].depth_path, path("depth/a.png"));
  EXPECT_EQ(seq.frames[0].rgb_path, path("rgb/a.png"));
  EXPECT_EQ(seq.frames[1].rgb_path, path("rgb/b.png"));
  EXPECT_EQ(seq.groundtruth_path, path("groundtruth.txt"));
  EXPECT_TRUE(seq.intrinsics_path.empty());
  EXPECT_EQ(seq.depth_scale, kDepthScaleTum);                                    // TUM's `# depth maps` header
  EXPECT_EQ(list_rgbd_sequence(path("depth.txt")).depth_scale, kDepthScaleTum);  // the list given itself
}

TEST_F(RgbdSequenceTest, DepthListWithoutTumsHeaderStatesNoScale) {
  // 7-Scenes copies carry a depth.txt of their own (millimetres), without TUM's header; a header that comes
  // after the first frame is not TUM's either.
  text("depth.txt", "0.000000 frame-000000.depth.png\n# depth maps\n0.033333 frame-000001.depth.png\n");
  depth_png("frame-000000.depth.png", 1000);
  depth_png("frame-000001.depth.png", 1000);
  const auto seq = list_rgbd_sequence(dir_.string());
  EXPECT_EQ(seq.layout, "tum");
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_EQ(seq.depth_scale, 0.0);
  text("other.txt", "# frames\nframe-000000.depth.png\n");
  EXPECT_EQ(list_rgbd_sequence(path("other.txt")).depth_scale, 0.0);
}

TEST_F(RgbdSequenceTest, SevenScenesFolderInNameOrder) {
  for (int i : {2, 0, 1}) {
    depth_png("frame-00000" + std::to_string(i) + ".depth.png", 1000 * (i + 1));
    text("frame-00000" + std::to_string(i) + ".pose.txt", "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n");
  }
  text("camera-intrinsics.txt", "585 0 320\n0 585 240\n0 0 1\n");
  text("frame-000000.color.png", "not a depth frame");
  const auto seq = list_rgbd_sequence(dir_.string(), 30.0);
  EXPECT_EQ(seq.layout, "7scenes");
  ASSERT_EQ(seq.frames.size(), 3u);
  EXPECT_TRUE(seq.timestamps_from_index);
  EXPECT_EQ(seq.frames[2].depth_path, path("frame-000002.depth.png"));
  EXPECT_DOUBLE_EQ(seq.frames[2].timestamp, 2.0 / 30.0);
  EXPECT_EQ(seq.frames[1].pose_path, path("frame-000001.pose.txt"));
  EXPECT_EQ(seq.intrinsics_path, path("camera-intrinsics.txt"));
  EXPECT_EQ(seq.frames[0].rgb_path, path("frame-000000.color.png"));  // the colour image beside the depth
  EXPECT_EQ(seq.frames[1].rgb_path, "");
}

TEST_F(RgbdSequenceTest, PlainPngAndPfmFoldersAndListFiles) {
  depth_png("png/b.png", 1000);
  depth_png("png/a.png", 1000);
  text("png/.hidden.png", "");
  auto seq = list_rgbd_sequence(path("png"));
  EXPECT_EQ(seq.layout, "png");
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_EQ(seq.frames[0].depth_path, path("png/a.png"));

  fs::create_directories(path("pfm"));
  write_pfm(path("pfm/0.pfm"), ImageF(4, 3, 1, 1.5f));
  seq = list_rgbd_sequence(path("pfm"));
  EXPECT_EQ(seq.layout, "pfm");
  ASSERT_EQ(seq.frames.size(), 1u);

  // sgm-depth --emit disparity --emit depth --output-dir: the depth maps only.
  fs::create_directories(path("sgm"));
  for (const char* n : {"sgm/000001.pfm", "sgm/000001_depth.pfm", "sgm/000000.pfm", "sgm/000000_depth.pfm"})
    write_pfm(path(n), ImageF(4, 3, 1, 1.5f));
  seq = list_rgbd_sequence(path("sgm"));
  EXPECT_EQ(seq.layout, "sgm-depth");
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_EQ(seq.frames[1].depth_path, path("sgm/000001_depth.pfm"));

  text("list.txt", "# frames\npng/b.png\n\n" + path("png/a.png") + "\n");
  seq = list_rgbd_sequence(path("list.txt"));
  EXPECT_EQ(seq.layout, "list");
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_EQ(seq.frames[0].depth_path, path("png/b.png"));  // relative to the list's folder
  EXPECT_EQ(seq.frames[1].depth_path, path("png/a.png"));
  EXPECT_TRUE(seq.timestamps_from_index);

  text("timed.txt", "0.5 png/a.png\n0.6 png/b.png\n");
  seq = list_rgbd_sequence(path("timed.txt"));
  EXPECT_FALSE(seq.timestamps_from_index);
  EXPECT_DOUBLE_EQ(seq.frames[1].timestamp, 0.6);
  EXPECT_TRUE(seq.intrinsics_path.empty());
  text("camera-intrinsics.txt", "585 0 320\n0 585 240\n0 0 1\n");
  EXPECT_EQ(list_rgbd_sequence(path("timed.txt")).intrinsics_path, path("camera-intrinsics.txt"));
}

TEST_F(RgbdSequenceTest, SgmDepthFolderStatesItsIntrinsicsAndDepthScale) {
  // sgm-depth --emit depth --output-dir writes these two files beside its maps.
  depth_png("a_depth.png", 1000);
  depth_png("b_depth.png", 1000);
  text("a.png", "");  // a disparity map beside it: not a frame
  const auto bare = list_rgbd_sequence(dir_.string(), 10.0);
  EXPECT_EQ(bare.layout, "sgm-depth");
  EXPECT_EQ(bare.depth_scale, 0.0);  // no depth-scale.txt: each file's default
  EXPECT_TRUE(bare.depth_scale_path.empty());
  text("camera-intrinsics.txt", "718.856 0 607.1928\n0 718.856 185.2157\n0 0 1\n");
  text("depth-scale.txt", format_depth_scale_file(5000.0));
  const auto seq = list_rgbd_sequence(dir_.string(), 10.0);
  EXPECT_EQ(seq.layout, "sgm-depth");
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_EQ(seq.frames[1].depth_path, path("b_depth.png"));
  EXPECT_EQ(seq.intrinsics_path, path("camera-intrinsics.txt"));
  EXPECT_EQ(seq.depth_scale, 5000.0);
  EXPECT_EQ(seq.depth_scale_path, path("depth-scale.txt"));
  // What the listing says is how the frames read: 1000 + x + 10 y units at 5000 per metre.
  const ImageF z = read_depth_frame(seq.frames[0].depth_path, seq.depth_scale);
  EXPECT_FLOAT_EQ(z.at(2, 1), 1012.0f / 5000.0f);
  EXPECT_EQ(format_depth_scale_file(1.0), "# depth map units per metre (metres = value / this; 1 = metres)\n1\n");
  EXPECT_EQ(read_depth_scale_file(path("depth-scale.txt")), 5000.0);
  // A plain folder of PNGs reads it too; TUM's depth.txt does not (its header decides).
  text("plain/depth-scale.txt", "1000\n");
  depth_png("plain/0.png", 1000);
  EXPECT_EQ(list_rgbd_sequence(path("plain")).depth_scale, 1000.0);
  text("tum/depth.txt", "0.1 a.png\n");
  text("tum/depth-scale.txt", "1\n");
  EXPECT_EQ(list_rgbd_sequence(path("tum")).depth_scale, 0.0);
}

TEST_F(RgbdSequenceTest, ABadDepthScaleFileIsAnErrorNamingTheLine) {
  depth_png("a_depth.png", 1000);
  for (const auto& [content, line] : std::initializer_list<std::pair<const char*, int>>{
           {"0\n", 1}, {"-1000\n", 1}, {"# c\n\nmm\n", 3}, {"1000 1\n", 1}, {"nan\n", 1}, {"1000\n5000\n", 2}}) {
    text("depth-scale.txt", content);
    try {
      list_rgbd_sequence(dir_.string());
      ADD_FAILURE() << content << " was read";
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path("depth-scale.txt") + ":" + std::to_string(line) + ": ", 0), 0u)
          << e.what();
    }
  }
  text("depth-scale.txt", "# nothing\n");
  EXPECT_THROW(list_rgbd_sequence(dir_.string()), DataError);
  text("depth-scale.txt", "  1000  \r\n");  // blanks and CRLF around the number are fine
  EXPECT_EQ(list_rgbd_sequence(dir_.string()).depth_scale, 1000.0);
}

TEST_F(RgbdSequenceTest, ATimedListWithAnUntimedLineIsAnErrorNamingTheLine) {
  // A typo, `nan` or a lone timestamp in a timed list would turn every timestamp into index / fps.
  for (const std::string bad : {"notanumber depth/c.png", "nan depth/c.png", "1305031102.2"}) {
    text("depth.txt", "# depth maps\n1305031102.1 depth/a.png\n" + bad + "\n1305031102.3 depth/b.png\n");
    try {
      list_rgbd_sequence(dir_.string());
      FAIL() << bad;
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path("depth.txt") + ":3: expected `timestamp path` as on line 2", 0), 0u)
          << e.what();
    }
  }
  // a list without any timestamp keeps paths with spaces
  text("plain.txt", "dir with space/a.png\nb.png\n");
  const auto seq = list_rgbd_sequence(path("plain.txt"));
  ASSERT_EQ(seq.frames.size(), 2u);
  EXPECT_EQ(seq.frames[0].depth_path, path("dir with space/a.png"));
}

TEST_F(RgbdSequenceTest, EmptyAndMissingSequencesAreOneLineErrors) {
  fs::create_directories(path("empty"));
  try {
    list_rgbd_sequence(path("empty"));
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path("empty") + ": no depth frames", 0), 0u) << e.what();
  }
  EXPECT_THROW(list_rgbd_sequence(path("missing")), IoError);
  text("empty.txt", "# nothing\n");
  EXPECT_THROW(list_rgbd_sequence(path("empty.txt")), DataError);
}

TEST_F(RgbdSequenceTest, DepthInMetresWithScalesAndInvalidValues) {
  depth_png("d.png", 1000);
  ImageF d = read_depth_frame(path("d.png"));
  ASSERT_EQ(d.width, 4);
  ASSERT_EQ(d.height, 3);
  EXPECT_TRUE(std::isinf(d.at(0, 0)));  // 0
  EXPECT_TRUE(std::isinf(d.at(1, 0)));  // 65535
  EXPECT_FLOAT_EQ(d.at(2, 0), 1.002f);
  EXPECT_FLOAT_EQ(d.at(3, 2), 1.023f);
  d = read_depth_frame(path("d.png"), kDepthScaleTum);
  EXPECT_FLOAT_EQ(d.at(2, 0), 1002.0f / 5000.0f);

  ImageF pfm(3, 1, 1, 2.0f);
  pfm.at(1, 0) = kInvalid;
  pfm.at(2, 0) = -1.0f;
  write_pfm(path("d.pfm"), pfm);
  d = read_depth_frame(path("d.pfm"));
  EXPECT_FLOAT_EQ(d.at(0, 0), 2.0f);
  EXPECT_TRUE(std::isinf(d.at(1, 0)));
  EXPECT_TRUE(std::isinf(d.at(2, 0)));
  EXPECT_FLOAT_EQ(read_depth_frame(path("d.pfm"), 1000.0).at(0, 0), 0.002f);
}

TEST_F(RgbdSequenceTest, BadFramesThrowNamingTheFile) {
  depth_png("good.png", 1000);
  // Truncated: the first half of a valid PNG.
  const auto bytes = read_file_bytes(path("good.png"));
  std::ofstream(path("cut.png"), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), 40);
  text("garbage.png", "this is not a png at all");
  text("zero.png", "");
  write_image(path("eight.png"), ImageU8(4, 3, 1, 7));
  ImageU8 colour(4, 3, 3, 100);
  write_image(path("colour.png"), colour);
  for (const char* name : {"cut.png", "garbage.png", "zero.png", "eight.png", "colour.png", "missing.png"}) {
    try {
      read_depth_frame(path(name));
      ADD_FAILURE() << name << " was read";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(path(name), 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

TEST_F(RgbdSequenceTest, ImagesAreFoundByTheDepthFramesNameElseInOrder) {
  // sgm-depth's depth maps take the left image of their name; hidden files and other extensions are not images.
  RgbdSequence listing;
  for (const char* depth : {"d/000003_depth.pfm", "d/000007_depth.pfm"})
    listing.frames.push_back({0, 0.0, path(depth)});
  for (const char* image : {"img/000007.png", "img/000003.png", "img/000005.JPG", "img/.hidden.png"}) text(image, "x");
  text("img/notes.txt", "x");
  attach_images(path("img"), listing, "seq");
  EXPECT_EQ(listing.frames[0].rgb_path, path("img/000003.png"));
  EXPECT_EQ(listing.frames[1].rgb_path, path("img/000007.png"));
  // 7-Scenes' ".depth" suffix too.
  RgbdSequence scenes;
  scenes.frames.push_back({0, 0.0, path("frame-000000.depth.png")});
  text("col/frame-000000.png", "x");
  attach_images(path("col"), scenes, "seq");
  EXPECT_EQ(scenes.frames[0].rgb_path, path("col/frame-000000.png"));
  // No name matches, as many images as frames: name order.
  RgbdSequence other;
  other.frames = {{0, 0.0, path("a.png")}, {1, 0.0, path("b.png")}, {2, 0.0, path("c.png")}};
  for (const char* image : {"ord/z.png", "ord/x.ppm", "ord/y.jpeg"}) text(image, "x");
  attach_images(path("ord"), other, "seq");
  EXPECT_EQ(other.frames[0].rgb_path, path("ord/x.ppm"));
  EXPECT_EQ(other.frames[2].rgb_path, path("ord/z.png"));
  // Neither rule: one line naming the folder, the counts and the sequence.
  other.frames.pop_back();
  try {
    attach_images(path("ord"), other, "seq");
    FAIL() << "two frames took three unnamed images";
  } catch (const DataError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        path("ord") + ": --images holds 3 images for the 2 depth frames of seq, and not one named after each frame");
  }
  EXPECT_THROW(attach_images(path("missing"), other, "seq"), IoError);
}

TEST_F(RgbdSequenceTest, FramesInARangeAndAColourImageOfTheDepthsSize) {
  std::vector<RgbdFrame> frames;
  for (std::size_t i = 0; i < 6; ++i) frames.push_back({i, 0.1 * i, path("d" + std::to_string(i) + ".png")});
  const auto mid = frames_in_range(frames, 2, 5);
  ASSERT_EQ(mid.size(), 3u);
  EXPECT_EQ(mid.front().index, 2u);
  EXPECT_EQ(mid.back().index, 4u);
  EXPECT_TRUE(frames_in_range(frames, 6, 9).empty());
  EXPECT_EQ(frames_in_range(frames, 0, std::numeric_limits<std::size_t>::max()).size(), 6u);

  write_image(path("rgb.png"), ImageU8(4, 3, 3, 90));
  RgbdFrame f{0, 0.0, path("d0.png"), path("rgb.png")};
  const ImageU8 rgb = read_frame_color(f, 4, 3);
  EXPECT_EQ(rgb.width, 4);
  EXPECT_EQ(rgb.channels, 3);
  EXPECT_EQ(rgb.data.front(), 90);
  EXPECT_THROW(read_frame_color(f, 5, 3), DataError);
  f.rgb_path.clear();
  EXPECT_THROW(read_frame_color(f, 4, 3), DataError);
}

TEST(RgbdSequenceReal, SevenScenesRedkitchen) {
  S3D_REQUIRE_DATA(folder, "rgbd/7scenes_redkitchen_f000-299");
  const auto seq = list_rgbd_sequence(folder.string());
  EXPECT_EQ(seq.layout, "tum");  // the copy carries TUM-style lists
  ASSERT_EQ(seq.frames.size(), 300u);
  EXPECT_NEAR(seq.frames[299].timestamp, 299.0 / 30.0, 1e-6);
  EXPECT_FALSE(seq.intrinsics_path.empty());
  EXPECT_FALSE(seq.groundtruth_path.empty());
  EXPECT_FALSE(seq.frames[0].pose_path.empty());
  EXPECT_EQ(fs::path(seq.frames[299].rgb_path).filename(), "frame-000299.color.jpg");  // from rgb.txt
  const ImageF d = read_depth_frame(seq.frames[0].depth_path);
  ASSERT_EQ(d.width, 640);
  ASSERT_EQ(d.height, 480);
  std::size_t valid = 0;
  for (float v : d.data)
    if (std::isfinite(v)) {
      ++valid;
      EXPECT_GE(v, 0.8f);
      EXPECT_LE(v, 3.7f);
    }
  EXPECT_GT(valid, d.pixels() / 2);
}

}  // namespace
}  // namespace s3d::io
