// Ray casting: the integrated plane comes back at its depth (1 mm) with the normal facing the camera, a real
// frame comes back at its own depth, an empty volume gives no surface, and CUDA maps equal the CPU's bit for
// bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "volume_test_support.hpp"

namespace s3d::fusion::test {
namespace {

class VolumeRaycast : public ::testing::TestWithParam<Device> {};

VolumeParams plane_params() {
  VolumeParams p;
  p.resolution = {80, 60, 60};
  p.size = {0.8f, 0.6f, 0.6f};
  p.origin = {-0.4f, -0.3f, 0.7f};
  p.truncation = 0.03f;
  return p;
}

TEST_P(VolumeRaycast, PlaneComesBackAtItsDepth) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), plane_params());
  const CameraIntrinsics cam = synthetic_camera();
  volume.integrate(Image<float>(640, 480, 1, 1.0f), cam, Eigen::Isometry3d::Identity());
  // A second view, shifted sideways: the plane is the same.
  Eigen::Isometry3d shifted = Eigen::Isometry3d::Identity();
  shifted.translation() = Eigen::Vector3d(0.05, -0.03, 0.1);
  volume.integrate(Image<float>(640, 480, 1, 0.9f), cam, shifted);
  const HostMaps maps = volume.raycast(cam, Eigen::Isometry3d::Identity(), 640, 480);
  int checked = 0;
  double worst = 0.0;
  for (int y = 0; y < 480; ++y)
    for (int x = 0; x < 640; ++x) {
      const double xn = (x - cam.cx) / cam.fx, yn = (y - cam.cy) / cam.fy;
      const Vec3f v = maps.vertices[y * 640 + x], n = maps.normals[y * 640 + x];
      // Rays that meet z = 1 well inside the volume (3 voxels from its sides) must hit.
      if (std::abs(xn) > 0.36 || std::abs(yn) > 0.26) continue;
      ASSERT_TRUE(detail::is_valid(v)) << x << " " << y;
      ASSERT_TRUE(detail::is_valid(n)) << x << " " << y;
      worst = std::max(worst, std::abs(v.z - 1.0));
      ASSERT_NEAR(v.z, 1.0, 0.001) << x << " " << y;
      ASSERT_NEAR(v.x, xn * v.z, 1e-4) << x << " " << y;  // on the pixel's ray
      ASSERT_NEAR(v.y, yn * v.z, 1e-4) << x << " " << y;
      ASSERT_LT(n.z, -0.999f) << x << " " << y;  // towards the camera (increasing tsdf)
      ++checked;
    }
  EXPECT_GT(checked, 100000);
  RecordProperty("worst_depth_error_m", std::to_string(worst));
}

TEST_P(VolumeRaycast, EmptyVolumeHasNoSurface) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), plane_params());
  const HostMaps maps = volume.raycast(synthetic_camera(), Eigen::Isometry3d::Identity(), 320, 240);
  for (std::size_t p = 0; p < maps.vertices.size(); ++p) {
    ASSERT_FALSE(detail::is_valid(maps.vertices[p]));
    ASSERT_FALSE(detail::is_valid(maps.normals[p]));
  }
}

TEST_P(VolumeRaycast, BackFacesStopTheRay) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), plane_params());
  const CameraIntrinsics cam = synthetic_camera();
  volume.integrate(Image<float>(640, 480, 1, 1.0f), cam, Eigen::Isometry3d::Identity());
  // From inside the band behind the plane (z = 1.01, tsdf < 0) looking back along -z, every ray meets - then
  // +. From z = 1.5, through unobserved voxels (0, neither sign) into the band and out: no hit either.
  for (double z : {1.01, 1.5}) {
    const Eigen::Isometry3d back = look_at(Eigen::Vector3d(0, 0, z), Eigen::Vector3d(0, 0, 0));
    const HostMaps maps = volume.raycast(cam, back, 640, 480);
    for (std::size_t p = 0; p < maps.vertices.size(); ++p) ASSERT_FALSE(detail::is_valid(maps.vertices[p])) << z;
  }
}

VolumeParams real_params() { return redkitchen_volume(192, 0.05f); }

TEST_P(VolumeRaycast, RealFrameComesBackAtItsDepth) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  TestVolume volume(GetParam(), real_params());
  const Image<float> depth = s3d::test::read_redkitchen_depth(0);
  const Eigen::Isometry3d pose = read_redkitchen_pose(0);
  volume.integrate(depth, redkitchen_camera(), pose);
  const HostMaps maps = volume.raycast(redkitchen_camera(), pose, 640, 480);
  const Eigen::Isometry3d to_camera = pose.inverse();
  std::vector<double> errors;
  int valid_depth = 0;
  for (int y = 0; y < 480; ++y)
    for (int x = 0; x < 640; ++x) {
      const float d = depth.at(x, y);
      if (d <= 0.0f) continue;
      ++valid_depth;
      const Vec3f v = maps.vertices[y * 640 + x];
      if (!detail::is_valid(v)) continue;
      const Eigen::Vector3d c = to_camera * Eigen::Vector3d(v.x, v.y, v.z);
      errors.push_back(std::abs(c.z() - d));
    }
  ASSERT_GT(errors.size(), valid_depth / 2);
  std::nth_element(errors.begin(), errors.begin() + errors.size() / 2, errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.005);  // median, metres (voxels of 1.6 cm)
}

TEST_P(VolumeRaycast, RealMapsMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = real_params();
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (int f : {0, 25, 50}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Eigen::Isometry3d pose = read_redkitchen_pose(f);
    cpu.integrate(depth, redkitchen_camera(), pose);
    gpu.integrate(depth, redkitchen_camera(), pose);
  }
  for (int f : {50, 60}) {
    const Eigen::Isometry3d pose = read_redkitchen_pose(f);
    EXPECT_TRUE(
        same_maps(cpu.raycast(redkitchen_camera(), pose, 640, 480), gpu.raycast(redkitchen_camera(), pose, 640, 480)))
        << "frame " << f;
  }
  // An odd map size with the level-1 intrinsics.
  const Eigen::Isometry3d pose = read_redkitchen_pose(30);
  EXPECT_TRUE(same_maps(cpu.raycast(redkitchen_camera().level(1), pose, 317, 239),
                        gpu.raycast(redkitchen_camera().level(1), pose, 317, 239)));
}

INSTANTIATE_TEST_SUITE_P(Devices, VolumeRaycast, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion::test
