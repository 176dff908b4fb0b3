// FusionEngine: the one place that chooses a backend, and the per-frame KinectFusion loop on top of the
// tracking and volume backends (the same host code, in double, for both devices, so equal systems give
// equal poses).
#include "s3d/fusion/fusion_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "backend.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/select_backend.hpp"
#include "sparse_volume.hpp"
#include "tracking_common.hpp"

namespace s3d::fusion {
namespace {

using Clock = std::chrono::steady_clock;
using Matrix6d = Eigen::Matrix<double, 6, 6>;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

detail::Rigid to_rigid(const Eigen::Isometry3d& pose) {
  detail::Rigid r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) r.r[3 * i + j] = static_cast<float>(pose.linear()(i, j));
    r.t[i] = static_cast<float>(pose.translation()(i));
  }
  return r;
}

/// One ICP attempt (all levels) from a start pose with given gates.
struct Attempt {
  bool ok = false;
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  std::int64_t inliers = 0;  // of the last system (level 0 when it ran)
  double residual_sq = 0.0;
  double condition = 0.0;
  int iterations = 0;
  std::string reason;
};

}  // namespace

class FusionEngine::Impl {
 public:
  Impl(const Device& device, const FusionParams& params, int width, int height,
       std::unique_ptr<detail::TrackingBackend> tracking, std::unique_ptr<detail::VolumeBackend> volume)
      : device_(device),
        params_(params),
        width_(width),
        height_(height),
        pose_(params.initial_pose),
        tracking_(std::move(tracking)),
        volume_(std::move(volume)) {}

  FrameResult process(ImageView<const float> depth, const std::uint8_t* rgb,
                      const std::optional<Eigen::Isometry3d>& motion) {
    check_frame(depth);
    std::optional<ScopedDevice> scope;
    enter(scope);
    FrameResult result;
    if (!preprocess(depth, result)) return result;
    preprocess_grey(rgb);
    if (!has_reference_) {
      pose_ = params_.initial_pose;
      velocity_ = Eigen::Isometry3d::Identity();
      velocity_measured_ = false;
      frames_since_good_ = 0;
      result.status = FrameStatus::kFirst;
      result.pose = pose_;
      update_model(result, rgb);
      return result;
    }
    const auto track_start = Clock::now();
    result.motion_start = motion.has_value();
    const Eigen::Isometry3d predicted = motion ? Eigen::Isometry3d(pose_ * *motion) : prediction();
    Attempt attempt = track(predicted, gates(1.0f, 1.0f, false), result.valid_pixels, false);
    FrameStatus status = FrameStatus::kTracked;
    if (!attempt.ok) {
      // Re-track once with wider gates (fast motion breaks projective association), then, frame to model,
      // against the previous frame (the model may cover too little of the view).
      std::string reasons = attempt.reason;
      attempt = track(predicted, gates(2.0f, 1.5f, false), result.valid_pixels, false);
      status = FrameStatus::kRecovered;
      if (!attempt.ok) reasons += "; with wider gates: " + attempt.reason;
      if (!attempt.ok && has_previous_frame()) {
        attempt = track(predicted, gates(1.0f, 1.0f, true), result.valid_pixels, true);
        result.frame_fallback = attempt.ok;
        if (!attempt.ok) reasons += "; against the previous frame: " + attempt.reason;
      }
      if (!attempt.ok) {
        status = FrameStatus::kLost;
        attempt.reason = reasons;
      }
    }
    result.track_ms = ms_since(track_start);
    result.status = status;
    result.inliers = attempt.inliers;
    result.inlier_ratio = result.valid_pixels ? double(attempt.inliers) / double(result.valid_pixels) : 0.0;
    result.residual = attempt.inliers ? std::sqrt(attempt.residual_sq / double(attempt.inliers)) : 0.0;
    result.condition = attempt.condition;
    result.iterations = attempt.iterations;
    if (!attempt.ok) {
      result.reason = attempt.reason;
      result.pose = pose_;  // the last good pose; nothing is integrated
      ++frames_since_good_;
      // Frame to frame, the lost frame becomes the reference at its predicted pose: the next frames track
      // against what the camera sees now instead of against an ever older view that they may never overlap
      // again. Frame to model keeps the model (and its previous frame).
      if (params_.mode == TrackingMode::kFrameToFrame) {
        tracking_->reference_from_frame(to_rigid(predicted));
        keep_reference_grey();
        world_to_reference_ = predicted.inverse();
      }
      return result;
    }
    // The motion prior: the last frame-to-frame motion (camera frame), from consecutive tracked frames only.
    if (frames_since_good_ == 0) {
      velocity_ = pose_.inverse() * attempt.pose;
      velocity_measured_ = true;
    }
    frames_since_good_ = 0;
    pose_ = attempt.pose;
    result.pose = pose_;
    update_model(result, rgb);
    return result;
  }

  FrameResult integrate_with_pose(ImageView<const float> depth, const Eigen::Isometry3d& camera_to_world,
                                  const std::uint8_t* rgb) {
    check_frame(depth);
    std::optional<ScopedDevice> scope;
    enter(scope);
    FrameResult result;
    if (!preprocess(depth, result)) return result;
    preprocess_grey(rgb);
    result.status = has_reference_ ? FrameStatus::kTracked : FrameStatus::kFirst;
    velocity_ = has_reference_ ? Eigen::Isometry3d(pose_.inverse() * camera_to_world) : Eigen::Isometry3d::Identity();
    velocity_measured_ = has_reference_;
    frames_since_good_ = 0;
    pose_ = camera_to_world;
    result.pose = pose_;
    update_model(result, rgb);
    return result;
  }

  detail::VolumeBackend& volume() const {
    S3D_EXPECTS(volume_ != nullptr, "FusionEngine: no volume (frame-to-frame mode with integrate = false)");
    return *volume_;
  }

  void reset() {
    std::optional<ScopedDevice> scope;
    enter(scope);
    if (volume_) volume_->reset();
    refused_blocks_ = 0;
    has_reference_ = false;
    reference_grey_ = false;
    pose_ = params_.initial_pose;
    velocity_ = Eigen::Isometry3d::Identity();
    velocity_measured_ = false;
    frames_since_good_ = 0;
  }

  bool knows_motion() const {
    return has_reference_ && params_.icp.motion_prior && velocity_measured_ && frames_since_good_ <= 2;
  }

  /// Makes the engine's GPU current for the caller's scope (no-op on the CPU).
  void enter(std::optional<ScopedDevice>& scope) const {
    if (device_.is_cuda()) scope.emplace(device_.index());
  }

  Device device_;
  FusionParams params_;
  int width_, height_;
  Eigen::Isometry3d pose_;  // the last good pose, camera to world

 private:
  void check_frame(ImageView<const float> depth) const {
    S3D_EXPECTS(depth.width == width_ && depth.height == height_,
                "FusionEngine: a " + std::to_string(depth.width) + "x" + std::to_string(depth.height) +
                    " frame for an engine of " + std::to_string(width_) + "x" + std::to_string(height_));
    S3D_EXPECTS(depth.data != nullptr && depth.pitch >= depth.width, "FusionEngine: null depth or pitch < width");
  }

  /// Masks, filters and builds the pyramid; false (result kInvalid) when no pixel is valid.
  bool preprocess(ImageView<const float> depth, FrameResult& result) {
    const auto start = Clock::now();
    result.valid_pixels = tracking_->preprocess(depth);
    result.preprocess_ms = ms_since(start);
    result.pose = pose_;
    if (result.valid_pixels > 0) return true;
    result.status = FrameStatus::kInvalid;
    result.reason = "no valid depth";
    return false;
  }

  /// The frame's grey levels for the photometric term (when it is on and the frame has a colour image).
  void preprocess_grey(const std::uint8_t* rgb) {
    current_grey_ = params_.icp.photometric_sigma > 0.0f && rgb != nullptr;
    if (!current_grey_) return;
    grey_.resize(static_cast<std::size_t>(width_) * height_);
    for (std::size_t i = 0; i < grey_.size(); ++i)
      grey_[i] = detail::grey_of_rgb(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    tracking_->preprocess_grey(grey_.data());
  }

  /// The current frame's grey levels become the reference's (whenever its maps or pose become the reference).
  void keep_reference_grey() {
    if (current_grey_) tracking_->keep_reference_grey();
    reference_grey_ = current_grey_;
  }

  /// The gates of one attempt: KinFu's scaled by `distance_scale` and `angle_scale`; against the model's ray
  /// cast, or the previous frame (`frame`) when frame to model falls back to it.
  detail::IcpGates gates(float distance_scale, float angle_scale, bool frame) const {
    detail::IcpGates g;
    g.distance = params_.icp.distance_gate * distance_scale;
    g.level_growth = params_.icp.gate_level_growth;
    g.gate_sigmas = params_.icp.gate_sigmas;
    const double angle = std::min(90.0, double(params_.icp.angle_gate) * angle_scale);
    g.sin_angle = static_cast<float>(std::sin(angle * M_PI / 180.0));
    g.huber_delta = params_.icp.huber_delta;
    g.noise_weighting = params_.icp.noise_weighting;
    g.noise = detail::noise_model(params_.icp.noise, params_.camera.fx);
    // The ray-cast model has an error of its own, which depth does not predict: its voxels quantise the
    // surface (the standard deviation of a uniform error over one voxel, voxel / sqrt(12)).
    if (params_.mode == TrackingMode::kFrameToModel && !frame) {
      g.model_sigma = static_cast<float>(params_.volume.voxel_edge() / std::sqrt(12.0));
    }
    // The grey reference is the reference camera's own frame in both modes: f2m's ray cast is seen from it too.
    if (current_grey_ && reference_grey_) {
      const double sigma = params_.icp.photometric_sigma;
      g.photometric_weight = static_cast<float>(double(g.noise.norm) / (sigma * sigma));
    }
    return g;
  }

  /// Whether frame to model can fall back to the previous tracked frame.
  bool has_previous_frame() const { return params_.mode == TrackingMode::kFrameToModel && params_.icp.frame_fallback; }

  /// The start of a frame's ICP: the last good pose, moved by the last motion once per frame since it
  /// (constant velocity; after more than two lost frames the extrapolation is not trusted).
  Eigen::Isometry3d prediction() const {
    if (!params_.icp.motion_prior || frames_since_good_ > 2) return pose_;
    Eigen::Isometry3d p = pose_;
    for (int i = 0; i <= frames_since_good_; ++i) p = p * velocity_;
    return p;
  }

  /// Projective point-to-plane ICP, coarse to fine, from the last good pose (Newcombe et al., KinectFusion, ISMAR
  /// 2011, section 3.5), on the tracking backend (icp_step_math.hpp: per iteration A x = g solved in double by LDLT,
  /// R <- R_inc R, t <- R_inc t + t_inc with R_inc = Rz(gamma) Ry(beta) Rx(alpha)). Degenerate or singular systems
  /// end the attempt at once (an update along an unobservable direction is arbitrary); the eigenvalue condition number
  /// of the last system, the inlier ratio and the step size are tested here at the end.
  Attempt track(const Eigen::Isometry3d& from, const detail::IcpGates& g, std::int64_t valid_pixels,
                bool previous_frame) {
    Attempt a;
    detail::IcpPose start{};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) start.r[3 * i + j] = from.linear()(i, j);
      start.t[i] = from.translation()(i);
    }
    const detail::IcpState state = tracking_->run_icp({start, to_rigid(world_to_reference_), g, previous_frame});
    a.iterations = state.iterations;
    a.inliers = state.inliers;
    a.residual_sq = state.residual_sq;
    a.condition = state.condition;
    const std::string at_level = " at level " + std::to_string(state.stop_level);
    switch (state.stop) {
      case detail::kIcpTooFewCorrespondences:
        a.reason = "too few correspondences (" + std::to_string(state.inliers) + ")" + at_level;
        return a;
      case detail::kIcpDegenerate:
        a.reason = "degenerate geometry: condition number (LDLT pivots) " + std::to_string(state.condition) + at_level;
        return a;
      case detail::kIcpSingular:
        a.reason = "singular system" + at_level;
        return a;
      default:
        break;
    }
    Eigen::Matrix3d rotation;
    Eigen::Vector3d translation;
    Matrix6d last_a;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) rotation(i, j) = state.pose.r[3 * i + j];
      translation(i) = state.pose.t[i];
    }
    for (int i = 0, k = 0; i < 6; ++i)
      for (int j = i; j < 6; ++j, ++k) last_a(i, j) = last_a(j, i) = state.last_a[k];
    a.pose.linear() = Eigen::Quaterniond(rotation).normalized().toRotationMatrix();
    if (a.iterations > 0) {
      const Eigen::SelfAdjointEigenSolver<Matrix6d> eig(last_a, Eigen::EigenvaluesOnly);
      const double lo = eig.eigenvalues()(0), hi = eig.eigenvalues()(5);
      a.condition = lo > 0.0 ? hi / lo : std::numeric_limits<double>::infinity();
      if (!(a.condition <= params_.icp.max_condition)) {
        a.reason = "degenerate geometry: condition number " + std::to_string(a.condition);
        return a;
      }
    }
    a.pose.translation() = translation;
    if (a.iterations == 0) {
      a.reason = "no ICP iterations configured";
      return a;
    }
    const double ratio = valid_pixels ? double(a.inliers) / double(valid_pixels) : 0.0;
    if (ratio < params_.icp.min_inlier_ratio) {
      a.reason = "too few inliers (" + std::to_string(ratio) + " of the valid pixels)";
      return a;
    }
    const double step_t = (a.pose.translation() - from.translation()).norm();
    const double step_r = Eigen::AngleAxisd(from.linear().transpose() * a.pose.linear()).angle() * 180.0 / M_PI;
    if (!(step_t <= params_.icp.max_translation_step) || !(step_r <= params_.icp.max_rotation_step)) {  // NaN too
      a.reason = "step too large (" + std::to_string(step_t) + " m, " + std::to_string(step_r) + " deg from the " +
                 (params_.icp.motion_prior ? "prediction)" : "last pose)");
      return a;
    }
    a.ok = true;
    return a;
  }

  /// Integrates the frame at pose_ (when there is a volume) and makes the new reference: ray cast (f2m) or
  /// the frame's own maps (f2f).
  void update_model(FrameResult& result, const std::uint8_t* rgb) {
    const detail::Rigid pose = to_rigid(pose_);
    if (volume_ && (params_.integrate || params_.mode == TrackingMode::kFrameToModel)) {
      const auto start = Clock::now();
      volume_->integrate(tracking_->raw_depth(), rgb, params_.camera, pose);
      result.integrate_ms = ms_since(start);
      if (auto* sparse = dynamic_cast<detail::SparseVolumeBackend*>(volume_.get())) {
        const detail::SparseStats stats = sparse->stats();
        result.volume_blocks = stats.allocated;
        result.volume_blocks_refused = stats.refused - refused_blocks_;
        refused_blocks_ = stats.refused;
      }
    }
    const auto start = Clock::now();
    if (params_.mode == TrackingMode::kFrameToModel) {
      volume_->raycast(params_.camera, pose, tracking_->reference_maps(0));
      tracking_->reference_pyramid_from_level0();
      if (has_previous_frame()) tracking_->keep_previous_frame(pose);
    } else {
      tracking_->reference_from_frame(pose);
    }
    keep_reference_grey();
    result.raycast_ms = ms_since(start);
    world_to_reference_ = pose_.inverse();
    has_reference_ = true;
  }

  std::unique_ptr<detail::TrackingBackend> tracking_;
  std::unique_ptr<detail::VolumeBackend> volume_;  // null without integration in f2f mode
  bool has_reference_ = false;
  long long refused_blocks_ = 0;  // the sparse volume's refused blocks so far (its stats sum them)
  Eigen::Isometry3d world_to_reference_ = Eigen::Isometry3d::Identity();
  Eigen::Isometry3d velocity_ = Eigen::Isometry3d::Identity();  // the last frame-to-frame motion, camera frame
  bool velocity_measured_ = false;  // velocity_ comes from two consecutive good frames (else it is a guess: none)
  int frames_since_good_ = 0;       // lost frames since the last tracked one
  std::vector<float> grey_;         // the current frame's grey levels, host (photometric term)
  bool current_grey_ = false;       // the current frame has grey levels
  bool reference_grey_ = false;     // the reference has grey levels
};

FusionEngine::FusionEngine(const Device& device, const FusionParams& params, int width, int height) {
  params.validate();
  S3D_EXPECTS(
      width >= 1 && height >= 1 && width <= 16384 && height <= 16384,
      "FusionEngine: image size must be in [1, 16384], got " + std::to_string(width) + "x" + std::to_string(height));
  // The model exists only where it is used: f2m tracks against it, `integrate` asks for it.
  const bool need_volume = params.integrate || params.mode == TrackingMode::kFrameToModel;
  impl_ = select_backend<Impl>(
      device, "FusionEngine",
      [&](const Device& cpu) {
        return std::make_unique<Impl>(cpu, params, width, height, detail::make_cpu_tracking(params, width, height),
                                      need_volume ? detail::make_cpu_volume(params.volume) : nullptr);
      },
      S3D_CUDA_FACTORY([&](const Device& gpu) {
        return std::make_unique<Impl>(gpu, params, width, height,
                                      detail::make_cuda_tracking(gpu, params, width, height),
                                      need_volume ? detail::make_cuda_volume(gpu, params.volume) : nullptr);
      }));
}

FusionEngine::~FusionEngine() = default;
FusionEngine::FusionEngine(FusionEngine&&) noexcept = default;
FusionEngine& FusionEngine::operator=(FusionEngine&&) noexcept = default;

FrameResult FusionEngine::process(ImageView<const float> depth_m, const std::uint8_t* rgb,
                                  const std::optional<Eigen::Isometry3d>& motion) {
  return impl_->process(depth_m, rgb, motion);
}

bool FusionEngine::knows_motion() const { return impl_->knows_motion(); }

FrameResult FusionEngine::integrate_with_pose(ImageView<const float> depth_m, const Eigen::Isometry3d& camera_to_world,
                                              const std::uint8_t* rgb) {
  return impl_->integrate_with_pose(depth_m, camera_to_world, rgb);
}

Mesh FusionEngine::extract_mesh() const {
  std::optional<ScopedDevice> scope;
  impl_->enter(scope);
  return impl_->volume().extract_mesh(/*slab_slices=*/0);
}

SurfaceCloud FusionEngine::extract_cloud() const {
  std::optional<ScopedDevice> scope;
  impl_->enter(scope);
  return impl_->volume().extract_cloud(/*slab_slices=*/0);
}

void FusionEngine::reset() { impl_->reset(); }

const Eigen::Isometry3d& FusionEngine::pose() const { return impl_->pose_; }
const FusionParams& FusionEngine::params() const { return impl_->params_; }
const Device& FusionEngine::device() const { return impl_->device_; }

}  // namespace s3d::fusion
