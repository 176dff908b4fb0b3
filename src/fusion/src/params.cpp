// Parameter checks and KinFu's default first pose.
#include "s3d/fusion/params.hpp"

#include <cmath>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/fusion/fusion_engine.hpp"

namespace s3d::fusion {
namespace {

bool positive(float v) { return std::isfinite(v) && v > 0.0f; }

}  // namespace

Eigen::Isometry3d FusionParams::kinfu_initial_pose(const VolumeParams& volume) {
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  pose.translation() = Eigen::Vector3d(volume.origin[0] + 0.5 * volume.size[0], volume.origin[1] + 0.5 * volume.size[1],
                                       volume.origin[2] + 0.5 * volume.size[2] - 0.6 * volume.size[2]);
  return pose;
}

void FusionParams::validate() const {
  S3D_EXPECTS(positive(std::fabs(camera.fx)) && positive(std::fabs(camera.fy)),
              "camera: fx and fy must be finite and non-zero");
  S3D_EXPECTS(std::isfinite(camera.cx) && std::isfinite(camera.cy), "camera: cx and cy must be finite");
  S3D_EXPECTS(std::isfinite(depth.min_depth) && depth.min_depth >= 0.0f, "depth: min_depth must be >= 0");
  S3D_EXPECTS(std::isfinite(depth.max_depth) && depth.max_depth >= 0.0f,
              "depth: max_depth must be >= 0 (0 = no limit)");
  S3D_EXPECTS(depth.levels >= 1 && depth.levels <= 5, "depth: levels must be in [1, 5]");
  S3D_EXPECTS(depth.bilateral_radius >= 0 && depth.bilateral_radius <= 16,
              "depth: bilateral_radius must be in [0, 16]");
  S3D_EXPECTS(positive(depth.sigma_space) && positive(depth.sigma_depth), "depth: bilateral sigmas must be > 0");
  S3D_EXPECTS(positive(depth.pyramid_gate), "depth: pyramid_gate must be > 0");
  for (int l = 0; l < 4; ++l)
    S3D_EXPECTS(icp.iterations[l] >= 0 && icp.iterations[l] <= 1000, "icp: iterations must be in [0, 1000]");
  S3D_EXPECTS(positive(icp.distance_gate), "icp: distance_gate must be > 0");
  S3D_EXPECTS(positive(icp.angle_gate) && icp.angle_gate <= 90.0f, "icp: angle_gate must be in (0, 90] degrees");
  S3D_EXPECTS(std::isfinite(icp.huber_delta) && icp.huber_delta >= 0.0f, "icp: huber_delta must be >= 0");
  S3D_EXPECTS(std::isfinite(icp.photometric_sigma) && icp.photometric_sigma >= 0.0f && icp.photometric_sigma <= 1.0f &&
                  (icp.photometric_sigma == 0.0f || icp.photometric_sigma >= 1e-3f),
              "icp: photometric_sigma must be 0 (off) or in [0.001, 1] grey levels");
  S3D_EXPECTS(std::isfinite(icp.gate_level_growth) && icp.gate_level_growth >= 1.0f && icp.gate_level_growth <= 4.0f,
              "icp: gate_level_growth must be in [1, 4]");
  S3D_EXPECTS(std::isfinite(icp.gate_sigmas) && icp.gate_sigmas >= 0.0f && icp.gate_sigmas <= 100.0f,
              "icp: gate_sigmas must be in [0, 100] (0 = a fixed gate)");
  if (icp.noise.kind == DepthNoise::Kind::kStereo) {
    S3D_EXPECTS(positive(icp.noise.baseline) && icp.noise.baseline <= 1e3f,
                "icp: the stereo depth noise needs a baseline in (0, 1000] metres");
    S3D_EXPECTS(positive(icp.noise.disparity_sigma) && icp.noise.disparity_sigma <= 1e3f,
                "icp: the stereo depth noise needs a disparity sigma in (0, 1000] pixels");
  }
  S3D_EXPECTS(std::isfinite(icp.min_inlier_ratio) && icp.min_inlier_ratio >= 0.0f && icp.min_inlier_ratio <= 1.0f,
              "icp: min_inlier_ratio must be in [0, 1]");
  S3D_EXPECTS(icp.max_condition > 1.0, "icp: max_condition must be > 1");
  S3D_EXPECTS(positive(icp.max_translation_step) && icp.max_translation_step <= 1e4f,
              "icp: max_translation_step must be in (0, 10^4] metres");
  S3D_EXPECTS(positive(icp.max_rotation_step) && icp.max_rotation_step <= 180.0f,
              "icp: max_rotation_step must be in (0, 180] degrees");
  volume.validate();
}

float VolumeParams::max_truncation() const {
  return truncation_growth > 0.0f ? kMaxTruncationGrowth * truncation : truncation;
}

void VolumeParams::validate() const {
  for (int a = 0; a < 3; ++a) {
    S3D_EXPECTS(resolution[a] >= 1 && resolution[a] <= 4096, "volume: resolution must be in [1, 4096] per axis");
    S3D_EXPECTS(positive(size[a]), "volume: size must be finite and > 0");
    S3D_EXPECTS(std::isfinite(origin[a]), "volume: origin must be finite");
  }
  // The voxels are indexed with int32 (the largest cube: 1290^3).
  S3D_EXPECTS(static_cast<long long>(resolution[0]) * resolution[1] * resolution[2] < (1LL << 31),
              "volume: resolution must give at most 2^31 - 1 voxels (a cube: at most 1290 per side)");
  S3D_EXPECTS(positive(truncation), "volume: truncation must be finite and > 0");
  S3D_EXPECTS(truncation >= min_truncation(), "volume: truncation must be at least 1e-6 of the summed sides");
  S3D_EXPECTS(truncation_growth >= 0.0f && truncation_growth <= 1.0f, "volume: truncation_growth must be in [0, 1]");
  S3D_EXPECTS(max_weight >= 1 && max_weight <= 32767, "volume: max_weight must be in [1, 32767]");
  S3D_EXPECTS(kind == VolumeKind::kDense || kind == VolumeKind::kSparse, "volume: kind must be dense or sparse");
  S3D_EXPECTS(std::isfinite(sparse_voxel_size) && sparse_voxel_size >= 1e-4f && sparse_voxel_size <= 1.0f,
              "volume: sparse_voxel_size must be in [1e-4, 1] metres");
  S3D_EXPECTS(sparse_memory_bytes >= sparse_block_bytes(color) && sparse_memory_bytes <= (std::int64_t{1} << 40),
              "volume: sparse_memory_bytes must hold at least one block (" + std::to_string(sparse_block_bytes(color)) +
                  " bytes) and be at most 2^40");
  S3D_EXPECTS(positive(sparse_raycast_range) && sparse_raycast_range <= 1e4f &&
                  static_cast<double>(sparse_raycast_range) <= 1e6 * static_cast<double>(truncation),
              "volume: sparse_raycast_range must be in (0, 10^4] metres and at most 10^6 truncations");
}

std::int64_t sparse_block_bytes(bool color) {
  // 512 voxels (4 bytes, 4 more with colour), the block's coordinates (12 bytes) and its share of the hash
  // table (a power of two of at least two entries a block: at most 4 entries of 12 bytes) and of the two coarse
  // key sets of the same size (at most 4 entries of 8 bytes each), and its entry in the list of the blocks a frame
  // integrates (4 bytes).
  return 512 * (color ? 8 : 4) + 12 + 48 + 64 + 4;
}

const char* to_string(FrameStatus status) {
  switch (status) {
    case FrameStatus::kFirst:
      return "first";
    case FrameStatus::kTracked:
      return "tracked";
    case FrameStatus::kRecovered:
      return "recovered";
    case FrameStatus::kLost:
      return "lost";
    case FrameStatus::kInvalid:
      return "invalid";
  }
  return "unknown";
}

}  // namespace s3d::fusion
