// Writes grey 8-bit PGM copies of a few real scenes (OpenCV IMREAD_GRAYSCALE = BT.601 luma) so that the
// GPU machine, which has no PNG decoder, can run the real-scene CUDA == CPU test. Never commit the output.
//   sgm_make_pgm <data_dir> <out_dir>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: sgm_make_pgm <data_dir> <out_dir>\n");
    return 2;
  }
  const std::filesystem::path data = argv[1], out = argv[2];
  std::filesystem::create_directories(out);
  struct Scene {
    const char* name;
    const char* left;
    const char* right;
  };
  const Scene scenes[] = {
      {"tsukuba", "stereo/middlebury2001/tsukuba/imL.png", "stereo/middlebury2001/tsukuba/imR.png"},
      {"cones", "stereo/middlebury2003/cones/imL.png", "stereo/middlebury2003/cones/imR.png"},
      {"kitti", "stereo/kitti2015/000005_10/stereo_left.png", "stereo/kitti2015/000005_10/stereo_right.png"}};
  int written = 0;
  for (const Scene& s : scenes) {
    const cv::Mat l = cv::imread((data / s.left).string(), cv::IMREAD_GRAYSCALE);
    const cv::Mat r = cv::imread((data / s.right).string(), cv::IMREAD_GRAYSCALE);
    if (l.empty() || r.empty()) {
      std::fprintf(stderr, "skip %s (not found)\n", s.name);
      continue;
    }
    cv::imwrite((out / (std::string(s.name) + "_left.pgm")).string(), l);
    cv::imwrite((out / (std::string(s.name) + "_right.pgm")).string(), r);
    ++written;
  }
  std::printf("wrote %d scenes to %s\n", written, out.c_str());
  return written > 0 ? 0 : 1;
}
