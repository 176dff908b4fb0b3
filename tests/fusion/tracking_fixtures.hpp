#pragma once
// Test-only helpers of the tracking suites: backends per device, bitwise comparisons (NaN = NaN), the
// 7-Scenes poses, and an analytic depth renderer of box rooms (ray casts in double, written here).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "depth_frames.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/image.hpp"
#include "s3d/fusion/params.hpp"

namespace s3d::fusion::test {

/// 7-Scenes depth intrinsics (camera-intrinsics.txt of the data folder).
inline FusionParams redkitchen_params() {
  FusionParams p;
  p.camera = {585.0f, 585.0f, 320.0f, 240.0f};
  p.mode = TrackingMode::kFrameToFrame;
  p.integrate = false;
  return p;
}

inline std::unique_ptr<detail::TrackingBackend> make_tracking(const Device& device, const FusionParams& params, int w,
                                                              int h) {
  if (device.is_cpu()) return detail::make_cpu_tracking(params, w, h);
#if S3D_WITH_CUDA
  return detail::make_cuda_tracking(device, params, w, h);
#else
  return nullptr;
#endif
}

/// Bitwise equality where any NaN equals any NaN (invalid entries may carry different payloads).
inline bool same_bits(float a, float b) {
  if (a != a && b != b) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}
inline bool same_bits(detail::Vec3f a, detail::Vec3f b) {
  return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z);
}

/// Index of the first differing element, or -1.
template <typename T>
long first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return static_cast<long>(i);
  return -1;
}

inline bool same_system(const detail::IcpSystem& a, const detail::IcpSystem& b) {
  return std::memcmp(a.a, b.a, sizeof a.a) == 0 && std::memcmp(a.g, b.g, sizeof a.g) == 0 &&
         std::memcmp(&a.residual_sq, &b.residual_sq, sizeof(double)) == 0 && a.inliers == b.inliers;
}

/// Every field of two ICP attempts' end states, bit for bit.
inline bool same_state(const detail::IcpState& a, const detail::IcpState& b) {
  return std::memcmp(&a.pose, &b.pose, sizeof a.pose) == 0 && std::memcmp(a.last_a, b.last_a, sizeof a.last_a) == 0 &&
         std::memcmp(&a.residual_sq, &b.residual_sq, sizeof(double)) == 0 &&
         std::memcmp(&a.condition, &b.condition, sizeof(double)) == 0 && a.inliers == b.inliers &&
         a.iterations == b.iterations && a.stop == b.stop && a.stop_level == b.stop_level &&
         a.skip_level == b.skip_level;
}

inline detail::IcpPose to_icp_pose(const Eigen::Isometry3d& pose) {
  detail::IcpPose p{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) p.r[3 * i + j] = pose.linear()(i, j);
    p.t[i] = pose.translation()(i);
  }
  return p;
}

/// `frame-XXXXXX.pose.txt` (camera to world).
inline Eigen::Isometry3d read_redkitchen_pose(int frame) {
  char name[64];
  std::snprintf(name, sizeof name, "frame-%06d.pose.txt", frame);
  std::ifstream in(s3d::test::redkitchen_dir() / name);
  Eigen::Matrix4d m;
  for (int i = 0; i < 16; ++i) in >> m(i / 4, i % 4);
  if (!in) throw std::runtime_error(std::string("cannot read ") + name);
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  pose.linear() = m.topLeftCorner<3, 3>();
  pose.translation() = m.topRightCorner<3, 1>();
  return pose;
}

/// The ICP weightings every CPU-vs-kernel and CPU-vs-CUDA test runs: the defaults (noise weighting, no model
/// term), Huber with and without the noise weighting, neither, frame to model's model term (512^3 over 3 m),
/// and gates that grow per level and with a stereo rig's depth noise (sigma 1 cm at 1 m: the gate of these
/// frames' deep points grows past the fixed one).
inline std::vector<detail::IcpGates> icp_gate_variants() {
  detail::IcpGates huber, unweighted, huber_unweighted, model, stereo;
  huber.huber_delta = huber_unweighted.huber_delta = 0.01f;
  unweighted.noise_weighting = huber_unweighted.noise_weighting = false;
  model.model_sigma = 0.0017f;
  stereo.level_growth = 2.0f;
  stereo.gate_sigmas = 3.0f;
  stereo.noise = {0.0f, 0.01f, 0.0f, 0.0001f};
  return {detail::IcpGates{}, huber, unweighted, huber_unweighted, model, stereo};
}

/// The top-left w x h grey levels (grey_of_rgb) of redkitchen colour frame `frame`, for the photometric term.
inline std::vector<float> redkitchen_grey(int frame, int w, int h) {
  const Image<std::uint8_t> rgb = s3d::test::read_redkitchen_color(frame);
  std::vector<float> grey(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::uint8_t* px = &rgb.data[(static_cast<std::size_t>(y) * rgb.width + x) * 3];
      grey[static_cast<std::size_t>(y) * w + x] = detail::grey_of_rgb(px[0], px[1], px[2]);
    }
  return grey;
}

/// The photometric weights the bitwise tests run (the noise norm over sigma_I^2 for sigma_I 0.02 and 0.1).
inline std::vector<float> photometric_weight_variants() {
  return {static_cast<float>(0.0012 * 0.0012 / (0.02 * 0.02)), static_cast<float>(0.0012 * 0.0012 / (0.1 * 0.1))};
}

inline detail::Rigid to_rigid(const Eigen::Isometry3d& pose) {
  detail::Rigid r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) r.r[3 * i + j] = static_cast<float>(pose.linear()(i, j));
    r.t[i] = static_cast<float>(pose.translation()(i));
  }
  return r;
}

struct Box {
  Eigen::Vector3d lo, hi;
};

/// Depth (camera z, metres) of a scene seen from `camera_to_world`: the inside of `room` (its walls) and
/// solid `boxes`, nearest hit per pixel; 0 where nothing is hit.
inline Image<float> render_boxes(const CameraIntrinsics& c, int w, int h, const Eigen::Isometry3d& camera_to_world,
                                 const Box* room, const std::vector<Box>& boxes) {
  Image<float> depth(w, h);
  const Eigen::Vector3d o = camera_to_world.translation();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      // Camera ray with z = 1, so the ray parameter is the depth.
      const Eigen::Vector3d d = camera_to_world.linear() * Eigen::Vector3d((x - c.cx) / c.fx, (y - c.cy) / c.fy, 1.0);
      double best = INFINITY;
      if (room) {
        for (int a = 0; a < 3; ++a)
          if (d[a] != 0.0) best = std::min(best, ((d[a] > 0 ? room->hi[a] : room->lo[a]) - o[a]) / d[a]);
      }
      for (const Box& b : boxes) {
        double enter = -INFINITY, exit = INFINITY;
        for (int a = 0; a < 3; ++a) {
          const double t1 = (b.lo[a] - o[a]) / d[a], t2 = (b.hi[a] - o[a]) / d[a];
          enter = std::max(enter, std::min(t1, t2));
          exit = std::min(exit, std::max(t1, t2));
        }
        if (enter <= exit && enter > 0.0) best = std::min(best, enter);
      }
      depth.at(x, y) = std::isfinite(best) && best > 0.0 ? static_cast<float>(best) : 0.0f;
    }
  return depth;
}

}  // namespace s3d::fusion::test
