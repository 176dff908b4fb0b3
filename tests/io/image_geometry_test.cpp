// Calibration readers, and what sgm-depth builds on them: depth, the coloured PLY cloud, the evaluation masks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/geometry/disparity_geometry.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/ply.hpp"
#include "s3d/io/stereo_eval.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace s3d::io;
using s3d::PointCloud;
using s3d::geometry::cloud_from_disparity;

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

namespace {

// KITTI odometry's grey pair as some copies of a sequence ship it: P0 and P1 without labels (the shared
// data's stereo_sequences/kitti_odometry_02_f000-050/calib.txt, byte for byte: no newline at the end).
const char* const kOdometryUnlabelled =
    "7.188560000000e+02 0.000000000000e+00 6.071928000000e+02 0.000000000000e+00 0.000000000000e+00 "
    "7.188560000000e+02 1.852157000000e+02 0.000000000000e+00 0.000000000000e+00 0.000000000000e+00 "
    "1.000000000000e+00 0.000000000000e+00\n"
    "7.188560000000e+02 0.000000000000e+00 6.071928000000e+02 -3.861448000000e+02 0.000000000000e+00 "
    "7.188560000000e+02 1.852157000000e+02 0.000000000000e+00 0.000000000000e+00 0.000000000000e+00 "
    "1.000000000000e+00 0.000000000000e+00";

}  // namespace

TEST(Calibration, KittiOdometryP0P1UnlabelledOrLabelled) {
  TempDir dir;
  const StereoCalibration c = read_calibration(dir.write("calib.txt", kOdometryUnlabelled));
  EXPECT_DOUBLE_EQ(c.focal_px, 718.856);
  EXPECT_DOUBLE_EQ(c.cx, 607.1928);
  EXPECT_DOUBLE_EQ(c.cy, 185.2157);
  EXPECT_DOUBLE_EQ(c.baseline_m, 386.1448 / 718.856);  // 0.5372 m
  EXPECT_EQ(c.doffs, 0.0);
  EXPECT_TRUE(c.has_principal_point);
  EXPECT_EQ(c.format, "kitti");
  // The same with a trailing newline, blank lines, CRLF.
  const std::string crlf = std::string("\r\n") + kOdometryUnlabelled + "\r\n\r\n";
  EXPECT_DOUBLE_EQ(read_calibration(dir.write("crlf.txt", crlf)).baseline_m, c.baseline_m);
  // Labelled P0:/P1: (KITTI odometry without the colour cameras) read alike; with P2/P3 present those win.
  const std::string lines = kOdometryUnlabelled;
  const std::string p0 = lines.substr(0, lines.find('\n')), p1 = lines.substr(lines.find('\n') + 1);
  const StereoCalibration labelled = read_calibration(dir.write("p0p1.txt", "P0: " + p0 + "\nP1: " + p1 + "\n"));
  EXPECT_DOUBLE_EQ(labelled.baseline_m, c.baseline_m);
  EXPECT_DOUBLE_EQ(labelled.cy, c.cy);
  // The intrinsics readers (icp-fuse --intrinsics) take the file too: its left camera.
  const PinholeIntrinsics k = read_intrinsics(dir.file("calib.txt"), 1241, 376);
  EXPECT_DOUBLE_EQ(k.fx, 718.856);
  EXPECT_DOUBLE_EQ(k.fy, 718.856);
  EXPECT_DOUBLE_EQ(k.cx, 607.1928);
  EXPECT_DOUBLE_EQ(k.cy, 185.2157);
  EXPECT_DOUBLE_EQ(read_intrinsics(dir.file("calib.txt")).cx, 607.1928);  // no image size needed
}

TEST(Calibration, UnlabelledProjectionsThatAreNoRectifiedPairAreErrors) {
  TempDir dir;
  const std::string lines = kOdometryUnlabelled;
  const std::string p0 = lines.substr(0, lines.find('\n')), p1 = lines.substr(lines.find('\n') + 1);
  auto message = [&](const std::string& name, const std::string& text) {
    const std::string path = dir.write(name, text);
    try {
      read_calibration(path);
    } catch (const s3d::DataError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << name << " was read";
    return std::string();
  };
  // Right camera first: a negative baseline.
  EXPECT_NE(message("swapped.txt", p1 + "\n" + p0 + "\n").find("P1"), std::string::npos);
  // Three lines (P0 P1 P2), one line, 11 numbers, a word: not this format.
  EXPECT_NE(message("three.txt", p0 + "\n" + p1 + "\n" + p1 + "\n").find("unknown calibration format"),
            std::string::npos);
  EXPECT_NE(message("one.txt", p0 + "\n").find("unknown calibration format"), std::string::npos);
  EXPECT_NE(message("short.txt", p0 + "\n" + p1.substr(0, p1.rfind(' ')) + "\n").find("unknown calibration format"),
            std::string::npos);
  EXPECT_NE(message("word.txt", p0 + "\n" + p1 + " x\n").find("unknown calibration format"), std::string::npos);
  // Not a rectified pair: a third row other than 0 0 1, skew, another focal length in the right camera.
  std::string bad_row = p1;
  bad_row.replace(bad_row.find("1.000000000000e+00"), 18, "2.000000000000e+00");
  EXPECT_NE(message("row.txt", p0 + "\n" + bad_row + "\n").find("third row"), std::string::npos);
  std::string skew = p0;
  skew.replace(skew.find("0.000000000000e+00"), 18, "1.000000000000e-01");
  EXPECT_NE(message("skew.txt", skew + "\n" + p1 + "\n").find("skew"), std::string::npos);
  std::string focal = p1;
  focal.replace(0, 18, "7.200000000000e+02");
  EXPECT_NE(message("focal.txt", p0 + "\n" + focal + "\n").find("not a rectified pair"), std::string::npos);
}

TEST(Calibration, CameraMatrixTextReadsBackExactly) {
  TempDir dir;
  PinholeIntrinsics k;
  k.fx = 718.856;
  k.fy = 718.856;
  k.cx = 607.1928;
  k.cy = 185.2157;
  const std::string text = format_camera_matrix(k);
  EXPECT_EQ(text, "718.856 0 607.1928\n0 718.856 185.2157\n0 0 1\n");
  k.fx = 300.0;
  k.fy = 1.0 / 3.0;
  k.cx = 159.5;
  k.cy = 1e-7;
  const PinholeIntrinsics back = read_intrinsics(dir.write("K.txt", format_camera_matrix(k)));
  EXPECT_EQ(back.fx, k.fx);
  EXPECT_EQ(back.fy, k.fy);
  EXPECT_EQ(back.cx, k.cx);
  EXPECT_EQ(back.cy, k.cy);
  EXPECT_EQ(shortest_number(300.0), "300");
  EXPECT_EQ(shortest_number(5000.0), "5000");
  EXPECT_EQ(shortest_number(0.5372), "0.5372");
  EXPECT_EQ(shortest_number(1.0), "1");
  EXPECT_EQ(std::stod(shortest_number(1.0 / 3.0)), 1.0 / 3.0);
}

TEST(Calibration, QMatrixYamlMiddleburyAndPairs) {
  TempDir dir;
  const StereoCalibration q = read_calibration(
      dir.write("Q.dat", "1 0 0 -6.095593e+02\n0 1 0 -1.728540e+02\n0 0 0 7.215377e+02\n0 0 1.877331e+00 0\n"));
  EXPECT_DOUBLE_EQ(q.focal_px, 721.5377);
  EXPECT_DOUBLE_EQ(q.cx, 609.5593);
  EXPECT_NEAR(q.baseline_m, 1.0 / 1.877331, 1e-12);
  const StereoCalibration y = read_calibration(
      dir.write("rig.yaml",
                "%YAML:1.0\n---\nQ: !!opencv-matrix\n   rows: 4\n   cols: 4\n   dt: d\n"
                "   data: [ 1., 0., 0., -320., 0., 1., 0., -240., 0., 0., 0., 500., 0., 0., 2., 0. ]\n"));
  EXPECT_DOUBLE_EQ(y.focal_px, 500.0);
  EXPECT_DOUBLE_EQ(y.baseline_m, 0.5);
  EXPECT_DOUBLE_EQ(y.cy, 240.0);
  const StereoCalibration m = read_calibration(
      dir.write("calib.txt",
                "cam0=[3997.684 0 1176.728; 0 3997.684 1011.728; 0 0 1]\n"
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
  ImageF depth(disp.width, disp.height);
  s3d::geometry::depth_from_disparity(disp.cview(), c, depth.view());
  EXPECT_NEAR(depth.at(700, 200), Z, 1e-4);
  EXPECT_TRUE(std::isinf(depth.at(10, 10)));
  EXPECT_TRUE(std::isinf(depth.at(0, 0)));
  EXPECT_EQ(encode_depth_png16(depth, kDepthScaleMm).at(700, 200), 38438);
  EXPECT_EQ(encode_depth_png16(depth, kDepthScaleTum).at(700, 200), 0);  // 38.4 m * 5000 > 65535: invalid

  ImageU8 colour(800, 300, 3, 0);
  colour.at(700, 200, 0) = 10;
  colour.at(700, 200, 1) = 20;
  colour.at(700, 200, 2) = 30;
  const s3d::geometry::ColourView colour_view{colour.data.data(), colour.width, colour.height, colour.channels};
  const PointCloud cloud = cloud_from_disparity(disp.cview(), c, &colour_view);
  ASSERT_EQ(cloud.size(), 1u);
  EXPECT_NEAR(cloud.xyz[0], X, 1e-4);
  EXPECT_NEAR(cloud.xyz[1], Y, 1e-4);
  EXPECT_NEAR(cloud.xyz[2], Z, 1e-4);
  ASSERT_EQ(cloud.attributes.size(), 3u);
  EXPECT_EQ(cloud.find("red")->bytes, (std::vector<std::uint8_t>{10}));
  EXPECT_EQ(cloud.find("green")->bytes, (std::vector<std::uint8_t>{20}));
  EXPECT_EQ(cloud.find("blue")->bytes, (std::vector<std::uint8_t>{30}));

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
  EXPECT_EQ(back.find("blue")->bytes, cloud.find("blue")->bytes);
  write_ply(dir.file("a.ply"), cloud, PlyFormat::kAscii);
  const PointCloud ascii = read_ply(dir.file("a.ply"));
  EXPECT_EQ(ascii.xyz, cloud.xyz);  // 9 significant digits round-trip float exactly
  EXPECT_EQ(ascii.find("red")->bytes, cloud.find("red")->bytes);
}

TEST(Calibration, FocalBaselineOnlyUsesTheImageCentre) {
  const StereoCalibration c = read_calibration("f=100,b=1");
  ImageF disp(5, 3, 1, kInvalid);
  disp.at(4, 2) = 50.0f;  // Z = 2; centre (2, 1): X = 2 * 2 / 100, Y = 1 * 2 / 100
  const PointCloud cloud = cloud_from_disparity(disp.cview(), c);
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

TEST(RealData, KittiOdometryCalibTxtGivesTheDocumentedRig) {
  S3D_REQUIRE_DATA(calib, "stereo_sequences/kitti_odometry_02_f000-050/calib.txt");
  const StereoCalibration c = read_calibration(calib.string());
  EXPECT_DOUBLE_EQ(c.focal_px, 718.856);
  EXPECT_DOUBLE_EQ(c.cx, 607.1928);
  EXPECT_DOUBLE_EQ(c.cy, 185.2157);
  EXPECT_NEAR(c.baseline_m, 0.5372, 1e-4);
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

TEST(Eval, ReportJsonWritesNanAsNull) {
  s3d::stereo::EvalResult r;
  r.density = 75.0;
  s3d::stereo::RegionErrors e;
  e.region = "all";
  e.gt_pixels = 7;
  e.bad2_all = 100.0 * 4 / 7;
  e.avg_err_est = std::numeric_limits<double>::quiet_NaN();
  r.regions.push_back(e);
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j["density"].get<double>(), 75.0);
  EXPECT_DOUBLE_EQ(j["regions"]["all"]["bad2_all"].get<double>(), 100.0 * 4 / 7);
  EXPECT_TRUE(j["regions"]["all"]["avg_err_est"].is_null());
}

TEST(Intrinsics, TumLinePairsAndStereoCalibration) {
  TempDir dir;
  const PinholeIntrinsics tum =
      read_intrinsics(dir.write("cam.txt", "# fx fy cx cy\n525.0 525.0 319.5 239.5\n"), 640, 480);
  EXPECT_DOUBLE_EQ(tum.fx, 525.0);
  EXPECT_DOUBLE_EQ(tum.fy, 525.0);
  EXPECT_DOUBLE_EQ(tum.cx, 319.5);
  EXPECT_DOUBLE_EQ(tum.cy, 239.5);
  EXPECT_EQ(tum.width, 640);
  const PinholeIntrinsics inl = read_intrinsics("fx=481.2,fy=480,cx=319.5,cy=239.5,width=640,height=480");
  EXPECT_DOUBLE_EQ(inl.fx, 481.2);
  EXPECT_DOUBLE_EQ(inl.fy, 480.0);
  EXPECT_EQ(inl.height, 480);
  const PinholeIntrinsics kitti = read_intrinsics(dir.write("calib.txt", kKittiCalib), 1242, 375);
  EXPECT_DOUBLE_EQ(kitti.fx, 721.5377);
  EXPECT_DOUBLE_EQ(kitti.fy, 721.5377);
  EXPECT_DOUBLE_EQ(kitti.cx, 609.5593);
  EXPECT_DOUBLE_EQ(kitti.cy, 172.854);
  EXPECT_THROW(read_intrinsics("fx=0,fy=1,cx=0,cy=0"), s3d::DataError);
  EXPECT_THROW(read_intrinsics(dir.write("junk.txt", "hello\n")), s3d::DataError);
  EXPECT_THROW(read_intrinsics(dir.file("absent.txt")), s3d::IoError);
  // A bare focal + baseline has no principal point: the image size must be known.
  EXPECT_THROW(read_intrinsics(dir.write("fb.txt", "focal_px: 700\nbaseline_m: 0.12\n")), s3d::DataError);
  EXPECT_DOUBLE_EQ(read_intrinsics(dir.file("fb.txt"), 101, 51).cx, 50.0);
}

TEST(Intrinsics, TumNamesTheBenchmarksDepthConversionForItsImageSize) {
  const PinholeIntrinsics k = read_intrinsics("tum", 640, 480);
  EXPECT_DOUBLE_EQ(k.fx, 525.0);
  EXPECT_DOUBLE_EQ(k.fy, 525.0);
  EXPECT_DOUBLE_EQ(k.cx, 319.5);
  EXPECT_DOUBLE_EQ(k.cy, 239.5);
  EXPECT_EQ(read_intrinsics("tum").width, 640);  // size unknown: the benchmark's
  EXPECT_THROW(read_intrinsics("tum", 320, 240), s3d::DataError);
  EXPECT_THROW(read_intrinsics("tum", 640, 481), s3d::DataError);
  // The name wins over a file that has it, which is read as ./tum.
  TempDir dir;
  const std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  std::ofstream("tum") << "500 501 300 200\n";
  const double named = read_intrinsics("tum", 640, 480).fx;
  const PinholeIntrinsics file = read_intrinsics("./tum", 320, 240);
  std::filesystem::current_path(old);
  EXPECT_DOUBLE_EQ(named, 525.0);
  EXPECT_DOUBLE_EQ(file.fx, 500.0);
  EXPECT_EQ(file.width, 320);
}

TEST(RealData, SevenScenesIntrinsicsAndKittiObjectCalibration) {
  S3D_REQUIRE_DATA(k, "rgbd/7scenes_redkitchen_f000-299/camera-intrinsics.txt");
  const PinholeIntrinsics seven = read_intrinsics(k.string(), 640, 480);
  EXPECT_EQ(seven.fx, 585.0);
  EXPECT_EQ(seven.fy, 585.0);
  EXPECT_EQ(seven.cx, 320.0);
  EXPECT_EQ(seven.cy, 240.0);
  S3D_REQUIRE_DATA(kitti, "pointclouds/kitti_velodyne/000000_calib.txt");
  const PinholeIntrinsics p2 = read_intrinsics(kitti.string(), 1242, 375);
  EXPECT_DOUBLE_EQ(p2.fx, 707.0493);
  EXPECT_DOUBLE_EQ(p2.cx, 604.0814);
  TempDir dir;
  EXPECT_THROW(read_intrinsics(dir.write("skew.txt", "585 1 320\n0 585 240\n0 0 1\n")), s3d::DataError);
}

TEST(RealData, SevenScenesDepthPngIsMillimetresWithSaturatedInvalid) {
  S3D_REQUIRE_DATA(png, "rgbd/7scenes_redkitchen_f000-299/frame-000000.depth.png");
  const ImageU16 raw = read_grey16(png.string());
  ASSERT_EQ(raw.width, 640);
  const ImageF z = decode_depth_png16(raw, kDepthScaleMm, true);
  std::size_t valid = 0, saturated = 0;
  for (std::size_t i = 0; i < z.data.size(); ++i) {
    saturated += raw.data[i] == 65535;
    if (!std::isfinite(z.data[i])) continue;
    ++valid;
    EXPECT_GE(z.data[i], 0.801f);
    EXPECT_LE(z.data[i], 3.602f);
  }
  EXPECT_GT(valid, z.data.size() / 2);
  // Without the flag, 65535 reads as 65.535 m.
  if (saturated > 0) {
    const ImageF plain = decode_depth_png16(raw, kDepthScaleMm);
    std::size_t far = 0;
    for (float v : plain.data) far += v == 65.535f;
    EXPECT_EQ(far, saturated);
  }
}
