// points_fps_dump CLOUD M [START]: FPS on the CPU device over a cloud read with s3d::io, the selected indices
// printed one per line in selection order. A stand-in for `pc-sample fps --emit indices` so that
// open3d_fps_test.py can compare the library with Open3D before the CLI exists.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "s3d/io/point_cloud_io.hpp"
#include "s3d/points/fps.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s CLOUD M [START]\n", argv[0]);
    return 2;
  }
  try {
    const s3d::PointCloud cloud = s3d::io::read_point_cloud(argv[1]);
    const auto picks = s3d::points::farthest_point_sampling(s3d::Device(s3d::Device::Kind::kCpu), cloud.view(),
                                                            std::stoll(argv[2]), argc == 4 ? std::stoll(argv[3]) : 0);
    for (const auto i : picks) std::printf("%d\n", static_cast<int>(i));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "points_fps_dump: %s\n", e.what());
    return 1;
  }
}
