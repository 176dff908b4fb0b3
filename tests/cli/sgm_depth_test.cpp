// sgm-depth end to end: runs the built executable on the sample pair of data/sample (label `cli`).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "s3d/core/device.hpp"

#include "s3d/io/image.hpp"
#include "s3d/io/pfm.hpp"
#include "s3d/io/ply.hpp"

#include "command_test_util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace s3d::io;
using s3d::PointCloud;

namespace {

const std::string kExe = S3D_SGM_DEPTH_EXE;
const fs::path kSample = fs::path(S3D_SOURCE_DIR) / "data" / "sample";

using s3d::test::slurp;
using Result = s3d::test::CommandResult;

class SgmDepthCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d_sgm_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Runs sgm-depth with `args` (shell words), on the CPU with 2 threads.
  Result run(const std::string& args) {
    return s3d::test::run_command(s3d::test::shell_quote(kExe) + " --device cpu --threads 2 " + args, dir_);
  }
  std::string pair() const { return (kSample / "left.png").string() + " " + (kSample / "right.png").string(); }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  // Files left in the work folder (outputs or stray temp files).
  std::size_t files() const {
    std::size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) n += e.is_regular_file();
    return n;
  }
  fs::path dir_;
};

TEST_F(SgmDepthCli, SamplePairDisparityColourAndEvalRecord) {
  const Result r = run(pair() + " -D 48 --emit disparity --emit color -o " + p("d.pfm") + " -o " + p("c.png") +
                       " --eval " + (kSample / "gt_disparity.pfm").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto recs = r.records();
  ASSERT_EQ(recs.size(), 2u);
  const json& item = recs[0];
  EXPECT_EQ(item["status"], "ok");
  EXPECT_EQ(item["width"], 320);
  EXPECT_EQ(item["outputs"].size(), 2u);
  const json& all = item["eval"]["regions"]["all"];
  for (const char* k : {"bad1_all", "bad2_all", "d1_all", "bad1_est", "bad2_est", "d1_est", "avg_err_est", "density",
                        "gt_pixels", "estimated"})
    EXPECT_TRUE(all.contains(k)) << k;
  EXPECT_EQ(all["gt_pixels"], 320 * 240);
  EXPECT_LT(all["bad2_est"].get<double>(), 3.0);  // a rendered scene with exact GT: few errors
  EXPECT_GT(all["density"].get<double>(), 80.0);
  EXPECT_LE(all["bad2_est"].get<double>(), all["bad2_all"].get<double>());
  EXPECT_TRUE(recs[1]["eval"]["regions"]["all"].contains("mean_bad2_all"));  // batch summary
  const ImageF d = read_pfm(p("d.pfm"));
  EXPECT_EQ(d.width, 320);
  EXPECT_NEAR(d.at(100, 80), 24.0f, 1.0f);   // the first box (gt 24 px)
  EXPECT_NEAR(d.at(250, 200), 32.0f, 1.0f);  // the second box
  const ImageU8 c = read_rgb8(p("c.png"));
  EXPECT_EQ(c.width, 320);
}

TEST_F(SgmDepthCli, EveryEmitWithCalibrationIsConsistent) {
  const Result r = run(pair() +
                       " -D 48 --calib f=500,b=0.1 --emit disparity --emit depth --emit cloud --emit confidence "
                       "--emit disparity --emit depth --emit color -o " +
                       p("d.pfm") + " -o " + p("z.pfm") + " -o " + p("c.ply") + " -o " + p("conf.pfm") + " -o " +
                       p("d.png") + " -o " + p("z.png") + " -o " + p("col.png") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const ImageF d = read_pfm(p("d.pfm"));
  const ImageF z = read_pfm(p("z.pfm"));
  const ImageF conf = read_pfm(p("conf.pfm"));
  const ImageF dk = read_disparity(p("d.png"));  // KITTI d*256 by default
  int checked = 0;
  for (int y = 0; y < d.height; y += 7)
    for (int x = 0; x < d.width; x += 5) {
      const float v = d.at(x, y);
      if (!std::isfinite(v)) {
        EXPECT_TRUE(std::isinf(z.at(x, y)));
        EXPECT_TRUE(std::isinf(dk.at(x, y)));
        EXPECT_EQ(conf.at(x, y), 0.0f);
        continue;
      }
      EXPECT_NEAR(z.at(x, y), 500.0 * 0.1 / v, 1e-4);
      EXPECT_NEAR(dk.at(x, y), v, 0.5 / 256 + 1e-6);
      EXPECT_GE(conf.at(x, y), 0.0f);
      EXPECT_LE(conf.at(x, y), 1.0f);
      ++checked;
    }
  EXPECT_GT(checked, 1000);
  const ImageU16 zmm = read_grey16(p("z.png"));
  EXPECT_EQ(zmm.at(100, 80), static_cast<std::uint16_t>(std::lround(z.at(100, 80) * 1000.0)));
  const PointCloud cloud = read_ply(p("c.ply"));
  std::size_t valid = 0;
  for (float v : d.data) valid += std::isfinite(v);
  EXPECT_EQ(cloud.size(), valid);
  for (const char* colour : {"red", "green", "blue"}) {
    ASSERT_NE(cloud.find(colour), nullptr) << colour;
    EXPECT_EQ(cloud.find(colour)->bytes.size(), cloud.size()) << colour;
  }
  EXPECT_EQ(r.records()[0]["outputs"].size(), 7u);
}

TEST_F(SgmDepthCli, SixteenBitInputGivesTheSameDisparities) {
  for (const char* side : {"left", "right"}) {
    const ImageU8 g = read_grey8((kSample / (std::string(side) + ".png")).string());
    ImageU16 w(g.width, g.height);
    for (std::size_t i = 0; i < g.data.size(); ++i) w.data[i] = static_cast<std::uint16_t>(g.data[i] * 257);
    write_image(p(std::string(side) + "16.png"), w);
  }
  ASSERT_EQ(run(pair() + " -D 48 -o " + p("d8.pfm")).code, 0);
  const Result r = run(p("left16.png") + " " + p("right16.png") + " -D 48 -o " + p("d16.pfm") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.records()[0]["bit_depth"], 16);
  EXPECT_EQ(slurp(p("d8.pfm")), slurp(p("d16.pfm")));  // census compares: v and 257 v order alike
}

TEST_F(SgmDepthCli, SizeMismatchIsOneLineExit1AndNoOutput) {
  const ImageU8 g = read_grey8((kSample / "right.png").string());
  ImageU8 small(300, 240);
  for (int y = 0; y < 240; ++y)
    for (int x = 0; x < 300; ++x) small.at(x, y) = g.at(x, y);
  write_image(p("right300.png"), small);
  const std::string left = (kSample / "left.png").string();
  const Result r = run(left + " " + p("right300.png") + " -D 48 -o " + p("d.pfm"));
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err_lines()[0], "sgm-depth: " + left + ": 320x240 but " + p("right300.png") + " is 300x240");
  EXPECT_EQ(files(), 1u);  // only the input we wrote
}

TEST_F(SgmDepthCli, UnreadableInputIsOneLineNamingIt) {
  std::ofstream(p("junk.png")) << "this is not an image";
  const Result r = run(p("junk.png") + " " + (kSample / "right.png").string() + " -D 48 -o " + p("d.pfm"));
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err_lines()[0].rfind("sgm-depth: " + p("junk.png") + ": ", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(p("d.pfm")));
  const Result missing = run(p("absent.png") + " " + (kSample / "right.png").string() + " -o " + p("d.pfm"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err_lines().size(), 1u) << missing.err;
  EXPECT_NE(missing.err.find(p("absent.png")), std::string::npos);
  EXPECT_FALSE(fs::exists(p("d.pfm")));
}

TEST_F(SgmDepthCli, DeviceListsAreCheckedBeforeAnyItem) {
  auto run_on = [&](const std::string& device) {
    return s3d::test::run_command(
        s3d::test::shell_quote(kExe) + " --device " + device + " " + pair() + " -o " + p("d.pfm"), dir_);
  };
  for (const char* bad : {"cuda:0,0", "cuda:0,cpu", "cuda:,1"}) {
    const Result r = run_on(bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err_lines()[0].find(bad), std::string::npos) << r.err;
  }
  if (s3d::cuda_device_count() == 0) {  // a list of GPUs that are not there: transient, retry elsewhere
    const Result r = run_on("cuda:all");
    EXPECT_EQ(r.code, 75) << r.err;
    EXPECT_EQ(r.err_lines().size(), 1u) << r.err;
  }
  EXPECT_EQ(files(), 0u);
}

TEST_F(SgmDepthCli, BadParametersAreOneLineAndWriteNothing) {
  struct Case {
    std::string args;
    int code;
    std::string needle;
  };
  const Case cases[] = {
      {"--disparities 512", 1, "disparities"},  // D larger than the 320-pixel width: a property of this pair
      {"--p1 20 --p2 20", 2, "p2"},
      {"--p1 30 --p2 10", 2, "p2"},
      {"--census 10x7", 2, "census"},
      {"--paths 5", 2, "paths"},
      {"--emit disparity --emit depth", 2, ""},  // two outputs, one -o
      {"--emit depth", 2, "calib"},              // depth without calibration
      {"--calib " + p("nocalib.txt"), 2, "nocalib.txt"},
  };
  for (const Case& c : cases) {
    const Result r = run(pair() + " " + c.args + " -o " + p("d.pfm"));
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err_lines()[0].rfind("sgm-depth: ", 0), 0u) << r.err;
    EXPECT_NE(r.err_lines()[0].find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(files(), 0u) << c.args;
  }
}

TEST_F(SgmDepthCli, PngEncodingsAndStdout) {
  ASSERT_EQ(run(pair() + " -D 48 --emit disparity --emit disparity -o " + p("d.pfm") + " -o " + p("x16.png") +
                " --png-encoding x16")
                .code,
            0);
  const ImageF d = read_pfm(p("d.pfm"));
  const ImageF x = decode_png16(read_grey16(p("x16.png")), PngEncoding::kX16);
  for (std::size_t i = 0; i < d.data.size(); i += 97)
    if (std::isfinite(d.data[i])) EXPECT_NEAR(x.data[i], d.data[i], 1.0 / 32 + 1e-6);
  const Result r = run(pair() + " -D 48 -o - --format pfm");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(p("d.pfm")));
}

TEST_F(SgmDepthCli, DepthPngTakesAScaleAndRefusesDisparityEncodings) {
  const std::string depth =
      pair() + " -D 48 --calib f=500,b=0.1 --emit depth --emit depth -o " + p("z.pfm") + " -o " + p("z.png");
  ASSERT_EQ(run(depth + " --depth-scale tum").code, 0);
  const ImageF z = read_pfm(p("z.pfm"));
  const ImageU16 tum = read_grey16(p("z.png"));
  std::size_t checked = 0;
  for (std::size_t i = 0; i < z.data.size(); i += 13) {
    const double v = std::isfinite(z.data[i]) ? std::round(z.data[i] * 5000.0) : 0.0;
    EXPECT_EQ(tum.data[i], v > 65535.0 ? 0 : v) << i;
    checked += tum.data[i] != 0;
  }
  EXPECT_GT(checked, 100u);
  // mm is the depth scale 1000 (and the default).
  fs::remove(p("z.pfm"));
  fs::remove(p("z.png"));
  ASSERT_EQ(run(depth + " --png-encoding mm").code, 0);
  const ImageU16 mm = read_grey16(p("z.png"));
  EXPECT_EQ(mm.data, encode_depth_png16(z, kDepthScaleMm).data);
  // Disparity encodings, or mm against another scale, are usage errors for a depth PNG: never ignored.
  for (const std::string bad : {" --png-encoding kitti", " --png-encoding x16", " --png-encoding mm --depth-scale tum",
                                " --depth-scale 0", " --depth-scale metres"}) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const Result r = run(depth + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << bad << "\n" << r.err;
    EXPECT_NE(r.err_lines()[0].find(bad.find("encoding") != std::string::npos ? "--png-encoding" : "depth scale"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(files(), 0u) << bad;
  }
}

TEST_F(SgmDepthCli, DatasetFoldersAndManifest) {
  // A Middlebury-style scene (imL/imR + 8-bit groundtruth.png with info.txt) and a KITTI-style folder.
  const ImageF gt = read_pfm((kSample / "gt_disparity.pfm").string());
  fs::create_directories(dir_ / "mb" / "scene_a");
  fs::copy_file(kSample / "left.png", dir_ / "mb" / "scene_a" / "imL.png");
  fs::copy_file(kSample / "right.png", dir_ / "mb" / "scene_a" / "imR.png");
  ImageU8 g8(gt.width, gt.height);
  for (std::size_t i = 0; i < gt.data.size(); ++i) g8.data[i] = static_cast<std::uint8_t>(std::lround(gt.data[i] * 4));
  write_image((dir_ / "mb" / "scene_a" / "groundtruth.png").string(), g8);
  std::ofstream((dir_ / "mb" / "scene_a" / "info.txt").string()) << "4\n";
  for (const char* sub : {"image_2", "image_3", "disp_occ_0"}) fs::create_directories(dir_ / "kitti" / sub);
  fs::copy_file(kSample / "left.png", dir_ / "kitti" / "image_2" / "000001_10.png");
  fs::copy_file(kSample / "right.png", dir_ / "kitti" / "image_3" / "000001_10.png");
  write_image((dir_ / "kitti" / "disp_occ_0" / "000001_10.png").string(), encode_png16(gt, PngEncoding::kKitti));

  const Result r = run(p("mb") + " " + p("kitti") + " -D 48 --output-dir " + p("out") + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto recs = r.records();
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_TRUE(fs::exists(dir_ / "out" / "scene_a.pfm"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "000001_10.pfm"));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(recs[i].contains("eval")) << recs[i].dump();
    EXPECT_LT(recs[i]["eval"]["regions"]["all"]["bad2_est"].get<double>(), 3.0);
  }
  EXPECT_EQ(recs[2]["eval"]["items"], 2);

  // A manifest with a gt key.
  std::ofstream(p("m.jsonl")) << json{{"left", (kSample / "left.png").string()},
                                      {"right", (kSample / "right.png").string()},
                                      {"gt", (kSample / "gt_disparity.pfm").string()}}
                                     .dump()
                              << "\n";
  const Result m = run("--manifest " + p("m.jsonl") + " -D 48 -o " + p("man/{#}.pfm") + " --json");
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_TRUE(fs::exists(dir_ / "man" / "1.pfm"));
  EXPECT_TRUE(m.records()[0].contains("eval"));
}

}  // namespace
