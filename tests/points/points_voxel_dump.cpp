// points_voxel_dump CLOUD V ORIGIN: voxel-grid downsampling (CPU device, mean) of a cloud read with s3d::io,
// ORIGIN world|min-bound. Prints "N M", the N input points as read (fp32), then the M voxel centroids, one
// "x y z" line each (%.9g: fp32 round-trips), for open3d_voxel_test.py.
#include <cstdio>
#include <exception>
#include <string>

#include "s3d/io/point_cloud_io.hpp"
#include "s3d/points/voxels.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CLOUD V world|min-bound\n", argv[0]);
    return 2;
  }
  try {
    const s3d::PointCloud cloud = s3d::io::read_point_cloud(argv[1]);
    s3d::points::VoxelizeParams p;
    const float v = std::stof(argv[2]);
    p.voxel_size = {v, v, v};
    p.origin = std::string(argv[3]) == "world" ? s3d::points::VoxelOrigin::kWorld : s3d::points::VoxelOrigin::kMinBound;
    s3d::points::VoxelEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
    const auto view = cloud.view();
    const s3d::points::Voxels voxels = engine.voxelize(view, nullptr, p);
    std::printf("%zu %lld\n", view.size, static_cast<long long>(voxels.count));
    for (std::size_t i = 0; i < 3 * view.size; i += 3)
      std::printf("%.9g %.9g %.9g\n", view.xyz[i], view.xyz[i + 1], view.xyz[i + 2]);
    for (std::size_t i = 0; i < voxels.xyz.size(); i += 3)
      std::printf("%.9g %.9g %.9g\n", voxels.xyz[i], voxels.xyz[i + 1], voxels.xyz[i + 2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "points_voxel_dump: %s\n", e.what());
    return 1;
  }
}
