#pragma once
// Test-only helpers of the volume suites: a backend wrapper that hides host/device memory, rigid poses, the
// 7-Scenes poses, and synthetic depth maps (a plane, a sphere) rendered analytically in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "backend.hpp"
#include "depth_frames.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/image.hpp"
#include "test_support.hpp"

namespace s3d::fusion::test {

using detail::HostMaps;
using detail::Maps;
using detail::Rigid;
using detail::Vec3f;

inline Rigid to_rigid(const Eigen::Isometry3d& pose) {
  Rigid r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) r.r[3 * i + j] = static_cast<float>(pose.linear()(i, j));
    r.t[i] = static_cast<float>(pose.translation()(i));
  }
  return r;
}

/// A camera at `eye` looking at `target` (camera-to-world; +z forward, +y roughly along -up).
inline Eigen::Isometry3d look_at(const Eigen::Vector3d& eye, const Eigen::Vector3d& target,
                                 Eigen::Vector3d up = Eigen::Vector3d(0, -1, 0)) {
  const Eigen::Vector3d z = (target - eye).normalized();
  if (std::abs(z.dot(up.normalized())) > 0.99) up = Eigen::Vector3d(1, 0, 0);
  const Eigen::Vector3d x = up.cross(z).normalized();
  const Eigen::Vector3d y = z.cross(x);
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  pose.linear().col(0) = x;
  pose.linear().col(1) = y;
  pose.linear().col(2) = z;
  pose.translation() = eye;
  return pose;
}

/// The 4x4 camera-to-world pose of a redkitchen frame.
inline Eigen::Isometry3d read_redkitchen_pose(int frame) {
  char name[64];
  std::snprintf(name, sizeof name, "frame-%06d.pose.txt", frame);
  std::ifstream in(s3d::test::redkitchen_dir() / name);
  if (!in) throw std::runtime_error(std::string("cannot open ") + name);
  Eigen::Matrix4d m;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) in >> m(i, j);
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  pose.linear() = m.block<3, 3>(0, 0);
  pose.translation() = m.block<3, 1>(0, 3);
  return pose;
}

inline CameraIntrinsics redkitchen_camera() { return {585.0f, 585.0f, 320.0f, 240.0f}; }

/// A 3 m cube of `resolution`^3 voxels around the redkitchen's first camera (1.5 m either side in x and y,
/// from 0.5 m behind it in z), where the sequence's first frames lie.
inline VolumeParams redkitchen_volume(int resolution, float truncation) {
  const Eigen::Vector3d c = read_redkitchen_pose(0).translation();
  VolumeParams p;
  p.resolution = {resolution, resolution, resolution};
  p.size = {3.0f, 3.0f, 3.0f};
  p.origin = {static_cast<float>(c.x() - 1.5), static_cast<float>(c.y() - 1.5), static_cast<float>(c.z() - 0.5)};
  p.truncation = truncation;
  return p;
}
inline CameraIntrinsics synthetic_camera() { return {525.0f, 525.0f, 319.5f, 239.5f}; }

/// Depth (z, metres) of the sphere (centre, radius) seen from `pose`; 0 where the ray misses it.
inline Image<float> render_sphere(const CameraIntrinsics& cam, const Eigen::Isometry3d& pose, int width, int height,
                                  const Eigen::Vector3d& centre, double radius) {
  Image<float> depth(width, height, 1, 0.0f);
  const Eigen::Vector3d c = pose.inverse() * centre;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const Eigen::Vector3d r((x - cam.cx) / cam.fx, (y - cam.cy) / cam.fy, 1.0);
      const double a = r.squaredNorm(), b = r.dot(c), q = c.squaredNorm() - radius * radius;
      const double disc = b * b - a * q;
      if (disc < 0) continue;
      const double t = (b - std::sqrt(disc)) / a;  // z-depth, since r.z = 1
      if (t > 0) depth.at(x, y) = static_cast<float>(t);
    }
  return depth;
}

/// A VolumeBackend on `device` with host-memory inputs and outputs.
class TestVolume {
 public:
  TestVolume(const Device& device, const VolumeParams& params) : device_(device) {
    if (device.is_cpu()) {
      backend_ = detail::make_cpu_volume(params);
    } else {
#if S3D_WITH_CUDA
      backend_ = detail::make_cuda_volume(device, params);
#else
      throw std::runtime_error("CUDA not built");
#endif
    }
  }

  /// `rgb`: null or the depth's size, 3 bytes per pixel (host memory, as the backend takes it).
  void integrate(const Image<float>& depth, const CameraIntrinsics& camera, const Eigen::Isometry3d& pose,
                 const std::uint8_t* rgb = nullptr) {
    if (device_.is_cpu()) {
      backend_->integrate(depth.view(), rgb, camera, to_rigid(pose));
      return;
    }
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
    s3d::synchronize(nullptr);  // the allocations (stream-ordered on the default stream) before the backend's stream
    backend_->raycast(camera, to_rigid(pose), Maps{v.data(), nn.data(), width, height});
    out.vertices = v.to_host();
    out.normals = nn.to_host();
    return out;
  }

  /// slab_slices 0: the library's slabs; > 0: that many z slices a slab (the result must not depend on it).
  Mesh mesh(int slab_slices = 0) { return backend_->extract_mesh(slab_slices); }
  SurfaceCloud cloud(int slab_slices = 0) { return backend_->extract_cloud(slab_slices); }
  void reset() { backend_->reset(); }
  void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) {
    backend_->download(tsdf, weight);
  }
  /// r g b weight per voxel (empty without colour).
  std::vector<std::uint8_t> colors() {
    std::vector<std::uint8_t> rgbw;
    backend_->download_colors(rgbw);
    return rgbw;
  }

 private:
  Device device_;
  std::unique_ptr<detail::VolumeBackend> backend_;
};

/// Bitwise equality of float arrays (NaN payloads included), reporting the first difference.
inline ::testing::AssertionResult same_bits(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t x, y;
    std::memcpy(&x, a + i, 4);
    std::memcpy(&y, b + i, 4);
    if (x != y)
      return ::testing::AssertionFailure()
             << "first difference at float " << i << " of " << n << ": " << a[i] << " vs " << b[i];
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_maps(const HostMaps& a, const HostMaps& b) {
  if (a.vertices.size() != b.vertices.size()) return ::testing::AssertionFailure() << "map sizes differ";
  const std::size_t n = 3 * a.vertices.size();
  auto r = same_bits(&a.vertices[0].x, &b.vertices[0].x, n);
  if (!r) return r << " (vertices)";
  r = same_bits(&a.normals[0].x, &b.normals[0].x, n);
  if (!r) return r << " (normals)";
  return ::testing::AssertionSuccess();
}

}  // namespace s3d::fusion::test
