// Calibration readers, disparity -> depth, PLY writer/reader, and the disparity evaluation.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/ply.hpp"
#include "s3d/io/stereo_eval.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace s3d::io;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("s3d_geom_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// The KITTI 2015 000005_10 rectified projections (as in ../shared/data, multi-line layout).
const char* kKittiCalib =
    "KITTI 2015 0005_10.\n\nP_rect_02: \n7.215377e+02 0.000000e+00 6.095593e+02 4.485728e+01 \n"
    "0.000000e+00 7.215377e+02 1.728540e+02 2.163791e-01 \n0.000000e+00 0.000000e+00 1.000000e+00 2.745884e-03\n\n"
    "P_rect_03: \n7.215377e+02 0.000000e+00 6.095593e+02 -3.395242e+02 \n"
    "0.000000e+00 7.215377e+02 1.728540e+02 2.199936e+00 \n0.000000e+00 0.000000e+00 1.000000e+00 2.729905e-03\n";

}  // namespace

TEST(Calibration, KittiProjectionsGiveFocalBaselineAndPrincipalPoint) {
  TempDir dir;
  const StereoCalibration c = read_calibration(dir.write("calib.txt", kKittiCalib));
  EXPECT_DOUBLE_EQ(c.focal_px, 721.5377);
  EXPECT_DOUBLE_EQ(c.cx, 609.5593);
  EXPECT_DOUBLE_EQ(c.cy, 172.854);
  EXPECT_NEAR(c.baseline_m, (44.85728 + 339.5242) / 721.5377, 1e-12);
  EXPECT_EQ(c.doffs, 0.0);
  EXPECT_EQ(c.format, "kitti");
  // One-line calib_cam_to_cam layout too.
  const StereoCalibration one = read_calibration(dir.write(
      "cam_to_cam.txt",
      "calib_time: 09-Jan-2012\nP_rect_02: 7.215377e+02 0 6.095593e+02 4.485728e+01 0 7.215377e+02 1.728540e+02 "
      "2.163791e-01 0 0 1 2.745884e-03\nP_rect_03: 7.215377e+02 0 6.095593e+02 -3.395242e+02 0 7.215377e+02 "
      "1.728540e+02 2.199936e+00 0 0 1 2.729905e-03\n"));
  EXPECT_DOUBLE_EQ(one.baseline_m, c.baseline_m);
}

TEST(Calibration, QMatrixYamlMiddleburyAndPairs) {
  TempDir dir;
  const StereoCalibration q = read_calibration(dir.write(
      "Q.dat",
      "1 0 0 -6.095593e+02\n0 1 0 -1.728540e+02\n0 0 0 7.215377e+02\n0 0 1.877331e+00 0\n"));
  EXPECT_DOUBLE_EQ(q.focal_px, 721.5377);
  EXPECT_DOUBLE_EQ(q.cx, 609.5593);
  EXPECT_NEAR(q.baseline_m, 1.0 / 1.877331, 1e-12);
  const StereoCalibration y = read_calibration(dir.write(
      "rig.yaml",
      "%YAML:1.0\n---\nQ: !!opencv-matrix\n   rows: 4\n   cols: 4\n   dt: d\n"
      "   data: [ 1., 0., 0., -320., 0., 1., 0., -240., 0., 0., 0., 500., 0., 0., 2., 0. ]\n"));
  EXPECT_DOUBLE_EQ(y.focal_px, 500.0);
  EXPECT_DOUBLE_EQ(y.baseline_m, 0.5);
  EXPECT_DOUBLE_EQ(y.cy, 240.0);
  const StereoCalibration m = read_calibration(dir.write(
      "calib.txt", "cam0=[3997.684 0 1176.728; 0 3997.684 1011.728; 0 0 1]\n"
                   "cam1=[3997.684 0 1307.839; 0 3997.684 1011.728; 0 0 1]\ndoffs=131.111\nbaseline=193.001\n"
                   "width=2964\nheight=1988\nndisp=280\n"));
  EXPECT_DOUBLE_EQ(m.focal_px, 3997.684);
  EXPECT_DOUBLE_EQ(m.cy, 1011.728);
  EXPECT_DOUBLE_EQ(m.doffs, 131.111);
  EXPECT_DOUBLE_EQ(m.baseline_m, 0.193001);
  const StereoCalibration p = read_calibration(dir.write("fb.txt", "focal_px: 700\nbaseline_m: 0.12\n"));
  EXPECT_DOUBLE_EQ(p.focal_px, 700.0);
  EXPECT_FALSE(p.has_principal_point);
  const StereoCalibration inl = read_calibration("f=100,b=0.5");
  EXPECT_DOUBLE_EQ(inl.focal_px, 100.0);
  EXPECT_DOUBLE_EQ(inl.baseline_m, 0.5);
}

TEST(Calibration, BadFilesAreOneLineErrorsNamingTheFile) {
  TempDir dir;
  const std::string junk = dir.write("junk.txt", "hello there\n");
  try {
    read_calibration(junk);
    FAIL();
  } catch (const s3d::DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(junk, 0), 0u) << e.what();
  }
  const std::string zero = dir.write("zero.txt", "focal_px=0 baseline_m=0.5");
  EXPECT_THROW(read_calibration(zero), s3d::DataError);
  EXPECT_THROW(read_calibration(dir.file("absent.txt")), s3d::IoError);
}

TEST(Calibration, DepthAndCloudMatchAHandComputedPoint) {
  TempDir dir;
  const StereoCalibration c = read_calibration(dir.write("calib.txt", kKittiCalib));
  // d = 10 px at (x, y) = (700, 200): Z = f B / d, X = (x - cx) Z / f, Y = (y - cy) Z / f.
  const double B = (44.85728 + 339.5242) / 721.5377;
  const double Z = 721.5377 * B / 10.0;  // = 38.43816... m
  const double X = (700 - 609.5593) * Z / 721.5377;
  const double Y = (200 - 172.854) * Z / 721.5377;
  EXPECT_NEAR(Z, 38.43816, 1e-4);
  ImageF disp(800, 300, 1, kInvalid);
  disp.at(700, 200) = 10.0f;
  disp.at(10, 10) = 0.0f;  // zero disparity: infinitely far, no point
  const ImageF depth = depth_from_disparity(disp, c);
  EXPECT_NEAR(depth.at(700, 200), Z, 1e-4);
  EXPECT_TRUE(std::isinf(depth.at(10, 10)));
  EXPECT_TRUE(std::isinf(depth.at(0, 0)));
  EXPECT_EQ(encode_png16(depth, PngEncoding::kMm).at(700, 200), 38438);

  ImageU8 colour(800, 300, 3, 0);
  colour.at(700, 200, 0) = 10;
  colour.at(700, 200, 1) = 20;
  colour.at(700, 200, 2) = 30;
  const PointCloud cloud = cloud_from_disparity(disp, c, &colour);
  ASSERT_EQ(cloud.size(), 1u);
  EXPECT_NEAR(cloud.xyz[0], X, 1e-4);
  EXPECT_NEAR(cloud.xyz[1], Y, 1e-4);
  EXPECT_NEAR(cloud.xyz[2], Z, 1e-4);
  EXPECT_EQ(cloud.rgb, (std::vector<std::uint8_t>{10, 20, 30}));

  // Binary PLY: exact header, then 15-byte records (3 float LE + 3 uchar).
  const std::string ply = dir.file("c.ply");
  write_ply(ply, cloud);
  std::ifstream in(ply, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string end = "end_header\n";
  const auto hdr_end = bytes.find(end);
  ASSERT_NE(hdr_end, std::string::npos);
  const std::string header = bytes.substr(0, hdr_end + end.size());
  EXPECT_EQ(header.rfind("ply\nformat binary_little_endian 1.0\n", 0), 0u);
  EXPECT_NE(header.find("element vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
                        "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n"),
            std::string::npos);
  ASSERT_EQ(bytes.size(), header.size() + 15);
  float z = 0;
  std::memcpy(&z, bytes.data() + header.size() + 8, 4);
  EXPECT_EQ(z, cloud.xyz[2]);
  EXPECT_EQ(static_cast<unsigned char>(bytes[header.size() + 14]), 30);
  const PointCloud back = read_ply(ply);
  EXPECT_EQ(back.xyz, cloud.xyz);
  EXPECT_EQ(back.rgb, cloud.rgb);
  write_ply(dir.file("a.ply"), cloud, PlyFormat::kAscii);
  const PointCloud ascii = read_ply(dir.file("a.ply"));
  EXPECT_EQ(ascii.xyz, cloud.xyz);  // 9 significant digits round-trip float exactly
  EXPECT_EQ(ascii.rgb, cloud.rgb);
}

TEST(Calibration, FocalBaselineOnlyUsesTheImageCentre) {
  const StereoCalibration c = read_calibration("f=100,b=1");
  ImageF disp(5, 3, 1, kInvalid);
  disp.at(4, 2) = 50.0f;  // Z = 2; centre (2, 1): X = 2 * 2 / 100, Y = 1 * 2 / 100
  const PointCloud cloud = cloud_from_disparity(disp, c);
  ASSERT_EQ(cloud.size(), 1u);
  EXPECT_FLOAT_EQ(cloud.xyz[0], 0.04f);
  EXPECT_FLOAT_EQ(cloud.xyz[1], 0.02f);
  EXPECT_FLOAT_EQ(cloud.xyz[2], 2.0f);
}

TEST(RealData, KittiCalibTxtAndQDatAgree) {
  S3D_REQUIRE_DATA(calib, "stereo/kitti2015/000005_10/Calib.txt");
  S3D_REQUIRE_DATA(q, "stereo/kitti2015/000005_10/Q.dat");
  const StereoCalibration a = read_calibration(calib.string());
  const StereoCalibration b = read_calibration(q.string());
  EXPECT_NEAR(a.focal_px, b.focal_px, 1e-9);
  EXPECT_NEAR(a.baseline_m, b.baseline_m, 1e-4);  // Q.dat rounds 1/B to 7 digits
  EXPECT_NEAR(a.cx, b.cx, 1e-9);
  EXPECT_NEAR(a.cy, b.cy, 1e-9);
}

TEST(Eval, CountsBothConventionsOverMasksAndColumns) {
  // 4x2 image: GT row 0 = 10 everywhere, row 1 = 20 except an unknown (0) pixel.
  ImageF gt(4, 2);
  gt.data = {10, 10, 10, 10, 20, 20, 20, 0};
  ImageF est(4, 2);
  est.data = {10.5f, 11.5f, 13.0f, kInvalid,   // errors 0.5, 1.5, 3.0, invalid
              20.0f, 24.0f, kInvalid, 5.0f};   // 0, 4 (> 3 and > 5% of 20), invalid, (no GT)
  const EvalResult r = evaluate_disparity(est, gt, {});
  ASSERT_EQ(r.regions.size(), 1u);
  const RegionErrors& e = r.regions[0];
  EXPECT_EQ(e.region, "all");
  EXPECT_EQ(e.gt_pixels, 7u);
  EXPECT_EQ(e.estimated, 5u);
  EXPECT_DOUBLE_EQ(e.bad1_est, 100.0 * 3 / 5);   // 1.5, 3, 4
  EXPECT_DOUBLE_EQ(e.bad2_est, 100.0 * 2 / 5);   // 3, 4
  EXPECT_DOUBLE_EQ(e.d1_est, 100.0 * 1 / 5);     // 4 (3.0 is not > 3)
  EXPECT_DOUBLE_EQ(e.bad2_all, 100.0 * 4 / 7);
  EXPECT_DOUBLE_EQ(e.d1_all, 100.0 * 3 / 7);
  EXPECT_DOUBLE_EQ(e.avg_err_est, (0.5 + 1.5 + 3.0 + 0.0 + 4.0) / 5);
  EXPECT_DOUBLE_EQ(r.density, 100.0 * 6 / 8);
  // Masks and a column range.
  EvalMask top{"top", {1, 1, 1, 1, 0, 0, 0, 0}};
  const EvalResult m = evaluate_disparity(est, gt, {top}, EvalOptions{1, 3});
  ASSERT_NE(m.find("top"), nullptr);
  EXPECT_EQ(m.find("top")->gt_pixels, 2u);
  EXPECT_DOUBLE_EQ(m.find("top")->bad2_all, 50.0);
  EXPECT_EQ(m.find("nonocc"), nullptr);
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j["regions"]["all"]["bad2_all"].get<double>(), 100.0 * 4 / 7);
  ImageF small(3, 2);
  EXPECT_THROW(evaluate_disparity(small, gt, {}), s3d::DataError);
}

TEST(RealData, FindsTheMiddleburyMasks) {
  S3D_REQUIRE_DATA(gt, "stereo/middlebury2003/cones/groundtruth.png");
  const auto masks = find_masks(gt.string(), 450, 375);
  ASSERT_EQ(masks.size(), 3u);
  EXPECT_EQ(masks[0].name, "nonocc");
  std::size_t nonocc = 0, all = 0;
  for (std::size_t i = 0; i < masks[0].mask.size(); ++i) nonocc += masks[0].mask[i], all += masks[1].mask[i];
  EXPECT_GT(nonocc, 100000u);
  EXPECT_GT(all, nonocc);
  EXPECT_THROW(find_masks(gt.string(), 10, 10), s3d::DataError);
}
