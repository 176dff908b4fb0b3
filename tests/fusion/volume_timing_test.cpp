// Timings of the CUDA volume at KinFu's size (512^3 over 3 m, 640 x 480 real frames), printed and recorded
// as test properties; no timing is asserted. The CPU row is skipped: 512^3 is GPU work.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "volume_test_support.hpp"

namespace s3d::fusion::test {
namespace {

class VolumeTiming : public ::testing::TestWithParam<Device> {};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST_P(VolumeTiming, KinFuSizeOnRealFrames) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  if (GetParam().is_cpu()) GTEST_SKIP() << "512^3 timings are for the GPU";
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
#if S3D_WITH_CUDA
  const Eigen::Vector3d c = read_redkitchen_pose(0).translation();
  VolumeParams p;  // KinFu: 512^3, 3 m, truncation 3 cm
  p.origin = {static_cast<float>(c.x() - 1.5), static_cast<float>(c.y() - 1.5), static_cast<float>(c.z() - 0.5)};
  std::vector<Image<float>> depth;
  std::vector<Eigen::Isometry3d> pose;
  for (int f = 0; f < 40; f += 2) {
    depth.push_back(s3d::test::read_redkitchen_depth(f));
    pose.push_back(read_redkitchen_pose(f));
  }
  // Depth uploads stay outside the timed region: one device copy per frame, made up front.
  std::vector<DeviceBuffer<float>> device_depth(depth.size());
  for (std::size_t f = 0; f < depth.size(); ++f) device_depth[f].copy_from_host(depth[f].data);
  auto backend = detail::make_cuda_volume(GetParam(), p);
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::vector<double> integrate_ms, raycast_ms;
  DeviceBuffer<Vec3f> vertices(640 * 480), normals(640 * 480);
  s3d::synchronize(nullptr);
  for (std::size_t f = 0; f < depth.size(); ++f) {
    const auto t0 = clock::now();
    backend->integrate(ImageView<const float>{device_depth[f].data(), 640, 480, 640}, nullptr, redkitchen_camera(),
                       to_rigid(pose[f]));
    const auto t1 = clock::now();
    backend->raycast(redkitchen_camera(), to_rigid(pose[f]), Maps{vertices.data(), normals.data(), 640, 480});
    const auto t2 = clock::now();
    if (f > 0) {  // the first call pays for module loading
      integrate_ms.push_back(ms(t0, t1));
      raycast_ms.push_back(ms(t1, t2));
    }
  }
  // Extraction with the library's slabs, then as one slab of the whole volume (10 bytes of scratch a voxel),
  // after a first call that pays for loading the kernels.
  backend->extract_mesh(0);
  auto t0 = clock::now();
  const Mesh mesh = backend->extract_mesh(0);
  auto t1 = clock::now();
  const SurfaceCloud cloud = backend->extract_cloud(0);
  auto t2 = clock::now();
  backend->extract_mesh(p.resolution[2]);
  auto t3 = clock::now();
  std::printf(
      "volume 512^3 on %zu frames: integrate %.3f ms, raycast %.3f ms (medians, host wall clock incl. sync); "
      "mesh %.1f ms (%zu vertices, %zu triangles; one slab of the whole volume %.1f ms); cloud %.1f ms (%zu "
      "points)\n",
      depth.size(), median(integrate_ms), median(raycast_ms), ms(t0, t1), mesh.vertices.size() / 3,
      mesh.triangles.size() / 3, ms(t2, t3), ms(t1, t2), cloud.points.size() / 3);
  RecordProperty("integrate_ms", std::to_string(median(integrate_ms)));
  RecordProperty("raycast_ms", std::to_string(median(raycast_ms)));
  RecordProperty("mesh_ms", std::to_string(ms(t0, t1)));
  RecordProperty("mesh_one_slab_ms", std::to_string(ms(t2, t3)));
  RecordProperty("cloud_ms", std::to_string(ms(t1, t2)));
  EXPECT_GT(mesh.triangles.size(), 100000u);
  EXPECT_GT(cloud.points.size(), 100000u);
#endif
}

INSTANTIATE_TEST_SUITE_P(Devices, VolumeTiming, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion::test
