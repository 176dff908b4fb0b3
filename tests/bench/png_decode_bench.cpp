// bench_png_decode: PNG to grey, what sgm-depth's load stage does per image, beside libpng through OpenCV (the
// decoder it used before) in the same run, on the real KITTI files (colour 2015 pair, grey odometry frame, 16-bit
// disparity) from ../shared/data (or $S3D_DATA_DIR). Files in memory; one thread (the load stage runs one image
// per worker):
//   png/<file>/s3d      io::decode_grey (libdeflate inflate, rows unfiltered and converted in one pass)
//   png/<file>/opencv   cv::imdecode(IMREAD_UNCHANGED) then cvtColor(BGR[A]2GRAY): the pixels must be equal
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "s3d/io/image.hpp"

namespace {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("S3D_DATA_DIR")) return env;
  return S3D_BENCH_DATA_DIR;
}

cv::Mat opencv_grey(const std::vector<std::uint8_t>& bytes) {
  const cv::Mat m = cv::imdecode(
      cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data())), cv::IMREAD_UNCHANGED);
  cv::Mat g = m;
  if (m.channels() == 3) cv::cvtColor(m, g, cv::COLOR_BGR2GRAY);
  if (m.channels() == 4) cv::cvtColor(m, g, cv::COLOR_BGRA2GRAY);
  return g;
}

bool same_pixels(const s3d::io::GreyImage& a, const cv::Mat& b) {
  if (a.bit_depth == 8)
    return b.type() == CV_8UC1 && std::equal(a.eight.data.begin(), a.eight.data.end(), b.ptr<std::uint8_t>());
  return b.type() == CV_16UC1 && std::equal(a.sixteen.data.begin(), a.sixteen.data.end(), b.ptr<std::uint16_t>());
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = data_dir();
  const std::pair<const char*, const char*> files[] = {
      {"kitti2015_left_rgb", "stereo/kitti2015/000005_10/stereo_left.png"},
      {"kitti_odometry_grey", "stereo_sequences/kitti_odometry_02_f000-050/image_l/000000.png"},
      {"kitti2015_gt_16bit", "stereo/kitti2015/000005_10/gt_disparity.png"},
  };
  for (const auto& [name, relative] : files) {
    const std::string path = (root / relative).string();
    if (!std::filesystem::exists(path)) {
      std::fprintf(stderr, "bench_png_decode: %s not found (set S3D_DATA_DIR)\n", path.c_str());
      return 2;
    }
    const auto bytes = std::make_shared<std::vector<std::uint8_t>>(s3d::io::read_file_bytes(path));
    if (!same_pixels(s3d::io::decode_grey(*bytes, path), opencv_grey(*bytes))) {
      std::fprintf(stderr, "bench_png_decode: %s: the pixels differ from OpenCV's\n", path.c_str());
      return 1;
    }
    benchmark::RegisterBenchmark((std::string("png/") + name + "/s3d").c_str(), [bytes, path](benchmark::State& st) {
      for (auto _ : st) benchmark::DoNotOptimize(s3d::io::decode_grey(*bytes, path));
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("png/") + name + "/opencv").c_str(), [bytes](benchmark::State& st) {
      for (auto _ : st) benchmark::DoNotOptimize(opencv_grey(*bytes));
    })->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
