#pragma once
// Test-only helpers of the sparse volume suites: a sparse backend on either device with host-memory inputs and
// outputs (the blocks and the pool's counts besides the VolumeBackend calls), the dense volume's voxels at a
// block's coordinates, and bitwise comparisons of meshes and clouds.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "sparse_volume.hpp"
#include "volume_test_support.hpp"

namespace s3d::fusion::test {

using detail::BlockCoord;
using detail::kBlockVoxels;

/// A sparse VolumeParams: voxel `voxel` m, truncation `mu` m, `bytes` of pool (64 MiB: ~32,000 blocks), the
/// truncation growing by `growth` per metre of depth (0: `mu` at every depth, which the expectations use).
inline VolumeParams sparse_params(float voxel, float mu, std::int64_t bytes = std::int64_t{64} << 20,
                                  float growth = 0.0f) {
  VolumeParams p;
  p.kind = VolumeKind::kSparse;
  p.sparse_voxel_size = voxel;
  p.truncation = mu;
  p.truncation_growth = growth;
  p.sparse_memory_bytes = bytes;
  return p;
}

class TestSparseVolume {
 public:
  /// Through make_cpu_volume / make_cuda_volume, the engine's path: `params.kind` must be kSparse.
  TestSparseVolume(const Device& device, const VolumeParams& params) : device_(device) {
    if (device.is_cpu()) {
      backend_ = detail::make_cpu_volume(params);
    } else {
#if S3D_WITH_CUDA
      backend_ = detail::make_cuda_volume(device, params);
#else
      throw std::runtime_error("CUDA not built");
#endif
    }
    sparse_ = dynamic_cast<detail::SparseVolumeBackend*>(backend_.get());
    if (sparse_ == nullptr) throw std::runtime_error("the factory did not make a sparse volume");
  }

  void integrate(const Image<float>& depth, const CameraIntrinsics& camera, const Eigen::Isometry3d& pose,
                 const std::uint8_t* rgb = nullptr) {
    if (device_.is_cpu()) return backend_->integrate(depth.view(), rgb, camera, to_rigid(pose));
    DeviceBuffer<float> d;
    d.copy_from_host(depth.data);
    backend_->integrate(ImageView<const float>{d.data(), depth.width, depth.height, depth.width}, rgb, camera,
                        to_rigid(pose));
  }

  HostMaps raycast(const CameraIntrinsics& camera, const Eigen::Isometry3d& pose, int width, int height) {
    HostMaps out;
    out.width = width;
    out.height = height;
    const std::size_t n = static_cast<std::size_t>(width) * height;
    out.vertices.assign(n, Vec3f{0, 0, 0});
    out.normals.assign(n, Vec3f{0, 0, 0});
    if (device_.is_cpu()) {
      backend_->raycast(camera, to_rigid(pose), Maps{out.vertices.data(), out.normals.data(), width, height});
      return out;
    }
    DeviceBuffer<Vec3f> v(n), nn(n);
    s3d::synchronize(nullptr);
    backend_->raycast(camera, to_rigid(pose), Maps{v.data(), nn.data(), width, height});
    out.vertices = v.to_host();
    out.normals = nn.to_host();
    return out;
  }

  Mesh mesh() { return backend_->extract_mesh(0); }
  SurfaceCloud cloud() { return backend_->extract_cloud(0); }
  void reset() { backend_->reset(); }
  void set_start_tiles(bool on) { sparse_->set_start_tiles(on); }
  void set_request_set_limit(int keys) { sparse_->set_request_set_limit(keys); }
  std::vector<BlockCoord> blocks() { return sparse_->blocks(); }
  detail::SparseStats stats() { return sparse_->stats(); }
  void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) {
    backend_->download(tsdf, weight);
  }
  std::vector<std::uint8_t> colors() {
    std::vector<std::uint8_t> rgbw;
    backend_->download_colors(rgbw);
    return rgbw;
  }

 private:
  Device device_;
  std::unique_ptr<detail::VolumeBackend> backend_;
  detail::SparseVolumeBackend* sparse_ = nullptr;  // backend_, seen as the sparse volume it is
};

inline ::testing::AssertionResult same_mesh(const Mesh& a, const Mesh& b) {
  if (a.vertices.size() != b.vertices.size() || a.triangles.size() != b.triangles.size() ||
      a.colors.size() != b.colors.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.vertices.size() / 3 << " vs " << b.vertices.size() / 3
                                         << " vertices, " << a.triangles.size() / 3 << " vs " << b.triangles.size() / 3
                                         << " triangles";
  auto r = same_bits(a.vertices.data(), b.vertices.data(), a.vertices.size());
  if (!r) return r << " (vertices)";
  r = same_bits(a.normals.data(), b.normals.data(), a.normals.size());
  if (!r) return r << " (normals)";
  if (a.triangles != b.triangles) return ::testing::AssertionFailure() << "triangles differ";
  if (a.colors != b.colors) return ::testing::AssertionFailure() << "colours differ";
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_cloud(const SurfaceCloud& a, const SurfaceCloud& b) {
  if (a.points.size() != b.points.size() || a.colors.size() != b.colors.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.points.size() / 3 << " vs " << b.points.size() / 3;
  auto r = same_bits(a.points.data(), b.points.data(), a.points.size());
  if (!r) return r << " (points)";
  r = same_bits(a.normals.data(), b.normals.data(), a.normals.size());
  if (!r) return r << " (normals)";
  if (a.colors != b.colors) return ::testing::AssertionFailure() << "colours differ";
  return ::testing::AssertionSuccess();
}

}  // namespace s3d::fusion::test
