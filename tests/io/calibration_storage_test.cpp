// OpenCV FileStorage calibrations (YAML and XML) read by s3d's own strict reader: files written by OpenCV's
// writer (the format's reference) read back to the same numbers; hostile files are one DataError naming the
// file and the line, never a crash or an allocation the file asks for.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/io/calib.hpp"

namespace fs = std::filesystem;
using s3d::io::read_calibration;
using s3d::io::StereoCalibration;

namespace {

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("s3d_storage_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }
  // The one-line DataError for `text` saved as `name`; fails the test when it reads.
  std::string rejection(const std::string& name, const std::string& text) const {
    const std::string path = write(name, text);
    try {
      read_calibration(path);
    } catch (const s3d::DataError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return what;
    }
    ADD_FAILURE() << name << " was read";
    return {};
  }
  fs::path dir_;
};

// stereoRectify's outputs for a 0.54 m rig, f = 721.5, as an application saves them (with the other matrices
// and a size beside them, which the reader must skip).
void write_rig(cv::FileStorage& fs, bool with_q) {
  const cv::Mat m1 = (cv::Mat_<double>(3, 3) << 721.5, 0, 609.5, 0, 721.5, 172.8, 0, 0, 1);
  const cv::Mat d1 = (cv::Mat_<double>(1, 5) << -0.1, 0.01, 0, 0, 0);
  const cv::Mat p1 = (cv::Mat_<double>(3, 4) << 721.5, 0, 609.5, 0, 0, 721.5, 172.8, 0, 0, 0, 1, 0);
  const cv::Mat p2 = (cv::Mat_<double>(3, 4) << 721.5, 0, 609.5, -389.61, 0, 721.5, 172.8, 0, 0, 0, 1, 0);
  const cv::Mat q = (cv::Mat_<double>(4, 4) << 1, 0, 0, -609.5, 0, 1, 0, -172.8, 0, 0, 0, 721.5, 0, 0, 1.0 / 0.54, 0);
  fs << "image_size" << cv::Size(1242, 375) << "M1" << m1 << "D1" << d1 << "name"
     << "kitti rig";
  fs << "P1" << p1 << "P2" << p2;
  if (with_q) fs << "Q" << q;
}

TEST_F(StorageTest, FilesWrittenByOpenCvReadBackToTheSameRig) {
  for (const char* ext : {".yml", ".xml", ".yaml"}) {
    for (bool with_q : {true, false}) {
      SCOPED_TRACE(std::string(ext) + (with_q ? " Q" : " P1/P2"));
      const std::string path = file(std::string("rig") + (with_q ? "_q" : "_p") + ext);
      {
        cv::FileStorage fs(path, cv::FileStorage::WRITE);
        write_rig(fs, with_q);
      }
      const StereoCalibration c = read_calibration(path);
      EXPECT_EQ(c.format, with_q ? "Q" : "P1P2");
      EXPECT_DOUBLE_EQ(c.focal_px, 721.5);
      EXPECT_DOUBLE_EQ(c.cx, 609.5);
      EXPECT_DOUBLE_EQ(c.cy, 172.8);
      EXPECT_NEAR(c.baseline_m, 0.54, 1e-12);
      EXPECT_TRUE(c.has_principal_point);
    }
  }
  const std::string scalars = file("scalars.xml");
  {
    cv::FileStorage fs(scalars, cv::FileStorage::WRITE);
    fs << "focal_px" << 700.25 << "baseline_m" << 0.12 << "cx" << 320 << "cy" << 240.5;
  }
  const StereoCalibration s = read_calibration(scalars);
  EXPECT_DOUBLE_EQ(s.focal_px, 700.25);
  EXPECT_DOUBLE_EQ(s.baseline_m, 0.12);
  EXPECT_DOUBLE_EQ(s.cx, 320.0);
  EXPECT_DOUBLE_EQ(s.cy, 240.5);
}

TEST_F(StorageTest, HandWrittenYamlWithCommentsAndDataOverLines) {
  const StereoCalibration c = read_calibration(
      write("hand.yaml",
            "%YAML:1.0\n---\n# rectified rig\nQ: !!opencv-matrix   # from stereoRectify\n   rows: 4\n   cols: 4\n"
            "   dt: d\n   data: [ 1., 0., 0., -3.2e+02, 0., 1., 0., -240.,\n       0., 0., 0., 500., 0., 0.,\n"
            "       2., 0. ]\nnote: \"anything\"\n"));
  EXPECT_DOUBLE_EQ(c.focal_px, 500.0);
  EXPECT_DOUBLE_EQ(c.cx, 320.0);
  EXPECT_DOUBLE_EQ(c.baseline_m, 0.5);
}

TEST_F(StorageTest, HostileFilesAreOneLineNamingTheLine) {
  const std::string head = "%YAML:1.0\n---\nQ: !!opencv-matrix\n";
  const std::string shape = "   rows: 4\n   cols: 4\n   dt: d\n";
  const std::string sixteen = "1, 0, 0, -320, 0, 1, 0, -240, 0, 0, 0, 500, 0, 0, 2, 0";
  EXPECT_NE(rejection("long.yml", head + shape + "   data: [ " + sixteen + ", 7 ]\n").find("line 3: Q: data must hold"),
            std::string::npos);
  EXPECT_NE(rejection("nan.yml", head + shape + "   data: [ .Nan, 0 ]\n").find("'.Nan', not a finite number"),
            std::string::npos);
  EXPECT_NE(rejection("rows.yml", head + "   rows: 100000\n   cols: 100000\n   dt: d\n   data: [ 1 ]\n")
                .find("rows and cols must be whole numbers from 1 to 16"),
            std::string::npos);
  EXPECT_NE(rejection("open.yml", head + shape + "   data: [ 1, 2\n").find("data must be a list"), std::string::npos);
  EXPECT_NE(
      rejection("twice.yml", head + shape + "   data: [ " + sixteen + " ]\nQ: 3\n").find("line 8: Q is given twice"),
      std::string::npos);
  EXPECT_NE(rejection("word.yml", "%YAML:1.0\nQ: hello\n").find("line 2: Q must be a number"), std::string::npos);
  EXPECT_NE(rejection("field.yml", head + shape + "   data: [ " + sixteen + " ]\n   step: 3\n").find("unknown matrix"),
            std::string::npos);
  EXPECT_NE(rejection("p1.yml", "%YAML:1.0\nP1: !!opencv-matrix\n   rows: 4\n   cols: 4\n   dt: d\n   data: [ " +
                                    sixteen + " ]\nP2: 1\n")
                .find("line 2: P1 must be a 3x4 matrix"),
            std::string::npos);
  EXPECT_NE(rejection("indent.yml", "%YAML:1.0\n  Q: 1\n").find("line 2: expected 'name: value'"), std::string::npos);
  EXPECT_NE(rejection("open.xml", "<?xml version=\"1.0\"?>\n<opencv_storage>\n<focal_px>700</focal_px>\n")
                .find("<opencv_storage> is not closed"),
            std::string::npos);
  EXPECT_NE(rejection("cross.xml", "<opencv_storage><cx>1</cy></opencv_storage>").find("<cx> closed by </cy>"),
            std::string::npos);
  std::string deep = "<opencv_storage>";
  for (int i = 0; i < 100000; ++i) deep += "<a>";
  EXPECT_NE(rejection("deep.xml", deep).find("nested deeper than 16"), std::string::npos);
  EXPECT_NE(rejection("text.xml", "<opencv_storage><focal_px>7 00</focal_px></opencv_storage>")
                .find("line 1: focal_px must be a number"),
            std::string::npos);
  EXPECT_NE(
      rejection("big.yml", "%YAML:1.0\n# " + std::string(2 << 20, 'x') + "\n").find("larger than any calibration"),
      std::string::npos);
}

}  // namespace
