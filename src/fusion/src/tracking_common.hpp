#pragma once
// Internal, host side: what both tracking backends compute the same way before launching their stages
// (the bilateral spatial table, level intrinsics, the ICP inputs) and the conversion of the 29 reduced
// doubles into an IcpSystem.
#include <cmath>
#include <cstdint>
#include <vector>

#include "backend.hpp"
#include "tracking_math.hpp"

namespace s3d::fusion::detail {

/// exp(-(dx^2 + dy^2) / (2 sigma^2)) over the (2r+1)^2 window, row-major. Computed once on the host (libm)
/// and used as data by both backends, so its last bits cannot differ between them.
inline std::vector<float> bilateral_space_table(int radius, float sigma_space) {
  const int side = 2 * radius + 1;
  std::vector<float> table(static_cast<std::size_t>(side) * side);
  const double inv = 1.0 / (2.0 * double(sigma_space) * double(sigma_space));
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx)
      table[(dy + radius) * side + (dx + radius)] = static_cast<float>(std::exp(-double(dx * dx + dy * dy) * inv));
  return table;
}

inline float inv_two_sigma2(float sigma) { return static_cast<float>(1.0 / (2.0 * double(sigma) * double(sigma))); }

inline Pinhole to_pinhole(const CameraIntrinsics& c) { return {c.fx, c.fy, c.cx, c.cy}; }

/// The depth noise of `params` for a camera of focal length `fx` (pixels): Kinect's, or a stereo rig's
/// sigma = z^2 sigma_d / (fx B), normalised to its value at 1 m.
inline NoiseModel noise_model(const DepthNoise& params, float fx) {
  if (params.kind == DepthNoise::Kind::kKinect) return kinect_noise();
  const float b = static_cast<float>(double(params.disparity_sigma) / (double(fx) * double(params.baseline)));
  return {0.0f, b, 0.0f, b * b};
}

/// The inputs of one reduction at pyramid level `level` (its distance gate grown by gates.level_growth^level).
/// `grey`: the level's grey maps; the photometric term is on when gates.photometric_weight > 0 and they exist.
inline IcpInputs make_icp_inputs(Maps cur, Maps ref, const Rigid& estimate, const Rigid& world_to_reference,
                                 const CameraIntrinsics& camera, const IcpGates& gates, int level,
                                 const GreyMaps& grey = {}) {
  IcpInputs in{};
  in.cur_v = cur.vertices;
  in.cur_n = cur.normals;
  in.ref_v = ref.vertices;
  in.ref_n = ref.normals;
  in.cur_pixels = cur.width * cur.height;
  in.ref_width = ref.width;
  in.ref_height = ref.height;
  in.estimate = estimate;
  in.world_to_reference = world_to_reference;
  in.camera = to_pinhole(camera);
  float gate = gates.distance;
  for (int l = 0; l < level; ++l) gate = gate * gates.level_growth;
  in.distance_gate2 = gate * gate;
  in.sin_angle2 = gates.sin_angle * gates.sin_angle;
  in.huber_delta = gates.huber_delta;
  in.noise_weighting = gates.noise_weighting ? 1 : 0;
  in.noise = gates.noise;
  in.model_variance = gates.model_sigma * gates.model_sigma;
  in.gate_sigmas = gates.gate_sigmas;
  if (gates.photometric_weight > 0.0f && grey.current && grey.reference) {
    in.cur_i = grey.current;
    in.ref_i = grey.reference;
    in.ref_gx = grey.reference_gx;
    in.ref_gy = grey.reference_gy;
    in.photometric_weight = gates.photometric_weight;
  }
  return in;
}

/// The 29 reduced sums (kIcpTerms order) as an IcpSystem.
inline IcpSystem to_icp_system(const double* sums) {
  IcpSystem s;
  for (int k = 0; k < 21; ++k) s.a[k] = sums[k];
  for (int k = 0; k < 6; ++k) s.g[k] = sums[21 + k];
  s.residual_sq = sums[27];
  s.inliers = static_cast<std::int64_t>(sums[28]);
  return s;
}

}  // namespace s3d::fusion::detail
