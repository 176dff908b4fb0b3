// The sparse volume on real 7-Scenes frames: the CPU ray cast comes back at the frame's depth, the CPU's AVX2
// and baseline integrations agree, and the CUDA backend equals the CPU's bit for bit (blocks by coordinate,
// voxels, colours, ray cast maps, mesh, cloud), on real frames, a synthetic odd-sized frame and a full pool. The
// CUDA rows skip without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sparse_volume_test_support.hpp"

namespace s3d::fusion::test {
namespace {

class SparseVolumeDevices : public ::testing::TestWithParam<Device> {};

/// The default voxel (3 m / 512), truncation and its growth with depth, 256 MiB of pool (~128,000 blocks; 64,000
/// with colour).
VolumeParams real_sparse(bool color) {
  VolumeParams p = sparse_params(3.0f / 512.0f, 0.03f, std::int64_t{256} << 20, VolumeParams{}.truncation_growth);
  p.color = color;
  return p;
}

TEST(SparseVolumeReal, RealFrameComesBackAtItsDepth) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  TestSparseVolume volume(Device(Device::Kind::kCpu), real_sparse(false));
  const Image<float> depth = s3d::test::read_redkitchen_depth(0);
  const Eigen::Isometry3d pose = read_redkitchen_pose(0);
  volume.integrate(depth, redkitchen_camera(), pose);
  EXPECT_EQ(volume.stats().refused, 0);
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
  ASSERT_GT(errors.size(), valid_depth * 9 / 10);
  std::nth_element(errors.begin(), errors.begin() + errors.size() / 2, errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.003);  // median, metres (voxels of 5.9 mm)
  // The march from each pixel's start tile equals the march from the box entry (sparse_volume_raycast.hpp).
  volume.set_start_tiles(false);
  EXPECT_TRUE(same_maps(maps, volume.raycast(redkitchen_camera(), pose, 640, 480)));
}

/// The CPU integration's AVX2 rows (integrate_lanes.hpp) give the baseline x86-64 loop's voxels and colours.
TEST(SparseVolumeReal, IntegrationIsTheSameOnEveryCpuIsa) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = real_sparse(true);
  TestSparseVolume avx2(Device(Device::Kind::kCpu), p), baseline(Device(Device::Kind::kCpu), p);
  for (int f : {0, 25}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Image<std::uint8_t> rgb = s3d::test::read_redkitchen_color(f);
    avx2.integrate(depth, redkitchen_camera(), read_redkitchen_pose(f), rgb.data.data());
    const s3d::test::ScopedCpuIsa isa("baseline");
    baseline.integrate(depth, redkitchen_camera(), read_redkitchen_pose(f), rgb.data.data());
  }
  std::vector<std::int16_t> t0, w0, t1, w1;
  avx2.download(t0, w0);
  baseline.download(t1, w1);
  ASSERT_EQ(t0.size(), t1.size());
  EXPECT_GT(t0.size(), 1000000u);
  long long observed = 0;
  for (std::size_t v = 0; v < t0.size(); ++v) {
    ASSERT_EQ(w0[v], w1[v]) << "voxel " << v;
    ASSERT_EQ(t0[v], t1[v]) << "voxel " << v;
    observed += w0[v] > 0;
  }
  EXPECT_GT(observed, 100000);
  EXPECT_TRUE(avx2.colors() == baseline.colors());
}

/// Both backends' voxels, colours, maps, mesh and cloud, compared bit for bit.
void expect_same(TestSparseVolume& cpu, TestSparseVolume& gpu, const CameraIntrinsics& camera,
                 const std::vector<Eigen::Isometry3d>& views, int width, int height) {
  const std::vector<BlockCoord> b0 = cpu.blocks(), b1 = gpu.blocks();
  ASSERT_EQ(b0.size(), b1.size());
  for (std::size_t b = 0; b < b0.size(); ++b) ASSERT_TRUE(b0[b] == b1[b]) << "block " << b;
  const detail::SparseStats s0 = cpu.stats(), s1 = gpu.stats();
  EXPECT_EQ(s0.capacity, s1.capacity);
  EXPECT_EQ(s0.allocated, s1.allocated);
  EXPECT_EQ(s0.refused, s1.refused);
  std::vector<std::int16_t> t0, w0, t1, w1;
  cpu.download(t0, w0);
  gpu.download(t1, w1);
  ASSERT_EQ(t0.size(), t1.size());
  for (std::size_t v = 0; v < t0.size(); ++v) {
    const BlockCoord& b = b0[v / kBlockVoxels];
    ASSERT_EQ(w0[v], w1[v]) << "block " << b.x << " " << b.y << " " << b.z << " voxel " << v % kBlockVoxels;
    ASSERT_EQ(t0[v], t1[v]) << "block " << b.x << " " << b.y << " " << b.z << " voxel " << v % kBlockVoxels;
  }
  const std::vector<std::uint8_t> c0 = cpu.colors(), c1 = gpu.colors();
  ASSERT_EQ(c0.size(), c1.size());
  for (std::size_t i = 0; i < c0.size(); ++i) ASSERT_EQ(c0[i], c1[i]) << "voxel " << i / 4 << " channel " << i % 4;
  for (std::size_t f = 0; f < views.size(); ++f)
    EXPECT_TRUE(same_maps(cpu.raycast(camera, views[f], width, height), gpu.raycast(camera, views[f], width, height)))
        << "view " << f;
  const Mesh m0 = cpu.mesh();
  EXPECT_TRUE(same_mesh(m0, gpu.mesh()));
  EXPECT_TRUE(same_cloud(cpu.cloud(), gpu.cloud()));
  ::testing::Test::RecordProperty("triangles", std::to_string(m0.triangles.size() / 3));
}

TEST_P(SparseVolumeDevices, RealFramesMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = real_sparse(true);
  TestSparseVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (int f : {0, 20, 40, 60, 80}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Eigen::Isometry3d pose = read_redkitchen_pose(f);
    if (f % 40 == 0) {
      const Image<std::uint8_t> rgb = s3d::test::read_redkitchen_color(f);
      cpu.integrate(depth, redkitchen_camera(), pose, rgb.data.data());
      gpu.integrate(depth, redkitchen_camera(), pose, rgb.data.data());
    } else {
      cpu.integrate(depth, redkitchen_camera(), pose);
      gpu.integrate(depth, redkitchen_camera(), pose);
    }
  }
  EXPECT_GT(cpu.stats().allocated, 5000);
  expect_same(cpu, gpu, redkitchen_camera(), {read_redkitchen_pose(80), read_redkitchen_pose(30)}, 640, 480);
  // An odd map size with the level-1 intrinsics.
  EXPECT_TRUE(same_maps(cpu.raycast(redkitchen_camera().level(1), read_redkitchen_pose(50), 317, 239),
                        gpu.raycast(redkitchen_camera().level(1), read_redkitchen_pose(50), 317, 239)));
}

/// A sphere in an odd-sized frame (631 x 479), two views, the truncation growing with depth, without data; the
/// CUDA allocation's both paths.
TEST_P(SparseVolumeDevices, SyntheticFramesMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  const VolumeParams p = sparse_params(0.008f, 0.03f, std::int64_t{64} << 20, 0.05f);
  // `sorted` takes the allocation's other path: a request set of 16 keys overflows, every request is sorted.
  TestSparseVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p), sorted(GetParam(), p);
  sorted.set_request_set_limit(16);
  const Eigen::Vector3d centre(0.3, -0.2, 1.4);
  std::vector<Eigen::Isometry3d> views;
  for (int f = 0; f < 2; ++f) {
    const Eigen::Isometry3d pose = look_at(Eigen::Vector3d(0.25 * f, -0.1 * f, 0.0), centre);
    const Image<float> depth = render_sphere(synthetic_camera(), pose, 631, 479, centre, 0.4);
    cpu.integrate(depth, synthetic_camera(), pose);
    gpu.integrate(depth, synthetic_camera(), pose);
    sorted.integrate(depth, synthetic_camera(), pose);
    views.push_back(pose);
  }
  expect_same(cpu, gpu, synthetic_camera(), views, 631, 479);
  expect_same(cpu, sorted, synthetic_camera(), views, 631, 479);
}

/// A pool of 40 blocks: both refuse the same blocks, keep the same ones, and extract the same from them.
TEST_P(SparseVolumeDevices, FullPoolMatchesTheCpu) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  VolumeParams p = sparse_params(0.01f, 0.04f);
  p.color = true;
  p.sparse_memory_bytes = 40 * sparse_block_bytes(true);
  TestSparseVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  const Eigen::Vector3d centre(0.0, 0.0, 1.0);
  Image<std::uint8_t> rgb(640, 480, 3);
  for (std::size_t i = 0; i < rgb.data.size(); ++i) rgb.data[i] = static_cast<std::uint8_t>(i * 13 % 256);
  for (int f = 0; f < 3; ++f) {
    const Eigen::Isometry3d pose = look_at(Eigen::Vector3d(0.1 * f, 0.0, 0.0), centre);
    const Image<float> depth = render_sphere(synthetic_camera(), pose, 640, 480, centre, 0.3);
    cpu.integrate(depth, synthetic_camera(), pose, rgb.data.data());
    gpu.integrate(depth, synthetic_camera(), pose, rgb.data.data());
  }
  EXPECT_EQ(cpu.stats().allocated, 40);
  EXPECT_GT(cpu.stats().refused, 0);
  expect_same(cpu, gpu, synthetic_camera(), {look_at(Eigen::Vector3d(0, 0, 0), centre)}, 640, 480);
}

INSTANTIATE_TEST_SUITE_P(Devices, SparseVolumeDevices, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion::test
