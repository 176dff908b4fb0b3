// nms-filter --emit drawn end to end: the kept boxes drawn on the images the records name (found beside the
// input, by file name, or by a zero-padded id under --image-dir), the suppressed ones only with
// --draw-suppressed, and the usage and data errors, each with no picture left behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "s3d/io/image.hpp"
#include "s3d/io/overlays.hpp"

#ifndef S3D_NMS_FILTER_EXE
#error "S3D_NMS_FILTER_EXE must name the nms-filter executable"
#endif

#include "command_test_util.hpp"

namespace fs = std::filesystem;

namespace {

using s3d::test::shell_quote;
using Result = s3d::test::CommandResult;

class NmsFilterDrawn : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d_nms_drawn_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run(const std::string& args) const {
    // In the scratch folder: relative -o and --image-dir paths land there.
    return s3d::test::run_command(
        "cd " + shell_quote(dir_.string()) + " && " + shell_quote(S3D_NMS_FILTER_EXE) + " --device cpu " + args, dir_);
  }
  std::string write(const std::string& name, const std::string& content) const {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  /// A grey picture of one value.
  void picture(const std::string& name, int w, int h, std::uint8_t value) const {
    fs::create_directories((dir_ / name).parent_path());
    s3d::io::write_image((dir_ / name).string(), s3d::io::ImageU8(w, h, 1, value));
  }
  static std::array<int, 3> at(const s3d::io::ImageU8& img, int x, int y) {
    const std::size_t i = (static_cast<std::size_t>(y) * img.width + x) * 3;
    return {img.data[i], img.data[i + 1], img.data[i + 2]};
  }
  static bool near(const std::array<int, 3>& a, const std::array<std::uint8_t, 3>& b, int tolerance = 30) {
    return std::abs(a[0] - b[0]) + std::abs(a[1] - b[1]) + std::abs(a[2] - b[2]) < tolerance;
  }

  fs::path dir_;
};

// Two images named by file; on a.png a cat box suppressed by a better one, on b.png a dog.
const char* kTwoImages =
    "{\"image\":\"a.png\",\"label\":\"cat\",\"bbox\":[10,10,50,40],\"score\":0.9}\n"
    "{\"image\":\"a.png\",\"label\":\"cat\",\"bbox\":[14,14,50,40],\"score\":0.8}\n"
    "{\"image\":\"b.png\",\"label\":\"dog\",\"bbox\":[20,20,20,20],\"score\":0.7}\n";

TEST_F(NmsFilterDrawn, KeptBoxesAreDrawnOnTheirImagesBesideTheRecords) {
  picture("a.png", 100, 80, 90);
  picture("b.png", 64, 48, 90);
  const std::string in = write("dets.jsonl", kTwoImages);
  Result r = run("--emit records,drawn -o kept.jsonl -o drawn --json " + shell_quote(in));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string expected = kTwoImages;
  expected.erase(expected.find("{\"image\":\"a.png\",\"label\":\"cat\",\"bbox\":[14"), 65);  // the suppressed line
  EXPECT_EQ(s3d::test::slurp(dir_ / "kept.jsonl"), expected);
  const s3d::io::ImageU8 a = s3d::io::read_rgb8((dir_ / "drawn" / "a.png").string());
  const s3d::io::ImageU8 b = s3d::io::read_rgb8((dir_ / "drawn" / "b.png").string());
  ASSERT_EQ(a.width, 100);
  ASSERT_EQ(a.height, 80);
  ASSERT_EQ(b.width, 64);
  const auto cat = s3d::io::palette_colour(0), dog = s3d::io::palette_colour(1);
  EXPECT_TRUE(near(at(a, 10, 35), cat)) << "the kept cat box's left edge";
  EXPECT_EQ(at(a, 64, 35), (std::array<int, 3>{90, 90, 90})) << "the suppressed box is not drawn";
  EXPECT_EQ(at(a, 30, 30), (std::array<int, 3>{90, 90, 90})) << "inside";
  EXPECT_TRUE(near(at(b, 20, 30), dog)) << "a second class, a second colour";
  EXPECT_NE(r.out.find("\"pictures\":2"), std::string::npos) << r.out;

  // --draw-suppressed: the suppressed box's right edge, blended.
  Result s = run("--emit drawn --draw-suppressed -o faint " + shell_quote(in));
  ASSERT_EQ(s.code, 0) << s.err;
  const s3d::io::ImageU8 f = s3d::io::read_rgb8((dir_ / "faint" / "a.png").string());
  const auto edge = at(f, 64, 35);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(edge[c], 0.4 * 90 + 0.6 * cat[c], 30) << c;
  EXPECT_FALSE(fs::exists(dir_ / "faint.jsonl"));
}

TEST_F(NmsFilterDrawn, NumericIdsAreFoundZeroPaddedUnderImageDir) {
  picture("val2017/000000000785.jpg", 80, 60, 120);  // COCO 2017 naming
  picture("img1/000001.png", 80, 60, 120);           // MOTChallenge naming
  const std::string coco =
      write("dets.json", "[{\"image_id\":785,\"category_id\":1,\"bbox\":[5,5,30,30],\"score\":0.5}]");
  Result c = run("--emit drawn --image-dir val2017 --output-dir out " + shell_quote(coco));
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "dets_drawn" / "000000000785.png"));
  const std::string mot = write("det.txt", "1,-1,5,5,30,30,0.9,-1,-1,-1\n");
  Result m = run("--emit drawn --image-dir img1 -o mot " + shell_quote(mot));
  ASSERT_EQ(m.code, 0) << m.err;
  const s3d::io::ImageU8 img = s3d::io::read_rgb8((dir_ / "mot" / "000001.png").string());
  EXPECT_TRUE(near(at(img, 5, 20), s3d::io::palette_colour(0)));
}

TEST_F(NmsFilterDrawn, MissingImagesAndWrongFlagsFailWithNoPictures) {
  picture("a.png", 100, 80, 90);
  const std::string in = write("dets.jsonl", kTwoImages);  // b.png is missing
  Result r = run("--emit drawn -o drawn " + shell_quote(in));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_NE(r.err.find("dets.jsonl: --emit drawn: no image file for image b.png"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "drawn"));

  const std::string nameless = write("plain.csv", "x1,y1,x2,y2,score\n0,0,10,10,0.9\n");
  Result n = run("--emit drawn -o d2 " + shell_quote(nameless));
  EXPECT_EQ(n.code, 1);
  EXPECT_NE(n.err.find("plain.csv: --emit drawn: the records name no image"), std::string::npos) << n.err;
  EXPECT_FALSE(fs::exists(dir_ / "d2"));

  for (const std::string& args :
       {std::string("--emit records,indices -o k.txt"), std::string("--emit drawn -o -"),
        std::string("--draw-suppressed -o k.jsonl"), std::string("--emit records,drawn -o k.jsonl"),
        std::string("--image-dir . -o k.jsonl"), std::string("--emit pictures -o k.jsonl")}) {
    Result u = run(args + " " + shell_quote(in));
    EXPECT_EQ(u.code, 2) << args << ": " << u.err;
    EXPECT_EQ(u.err_lines().size(), 1u) << args << ": " << u.err;
    EXPECT_FALSE(fs::exists(dir_ / "k.txt"));
    EXPECT_FALSE(fs::exists(dir_ / "k.jsonl"));
  }
}

}  // namespace
