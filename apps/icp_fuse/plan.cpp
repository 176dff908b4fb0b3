// Flags -> FusionParams (the output paths: output_paths.cpp).
#include "plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>

#include "../common/tool_files.hpp"
#include "flag_values.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/image.hpp"

namespace s3d::icp_fuse {
namespace {

/// The library's one check of every parameter (a dummy camera is valid), its message led by the flag that set
/// the parameter.
void validate_in_flags(const fusion::FusionParams& p) {
  // Longer field names first where one begins another.
  static const std::pair<const char*, const char*> kFlagOfField[] = {
      {"depth: max_depth", "--max-depth"},
      {"volume: size", "--volume-size"},
      {"volume: resolution", "--volume-resolution"},
      {"volume: truncation_growth", "--truncation-growth"},
      {"volume: truncation", "--truncation"},
      {"volume: sparse_voxel_size", "--voxel-size"},
      {"volume: sparse_memory_bytes", "--max-memory"},
      {"volume: sparse_raycast_range", "--max-depth"},
      {"icp: huber_delta", "--huber"},
      {"icp: photometric_sigma", "--photometric"},
      {"icp: iterations", "--icp-iterations"},
      {"icp: min_inlier_ratio", "--min-inliers"},
      {"icp: max_translation_step", "--max-step"},
      {"icp: max_rotation_step", "--max-step"},
      {"icp: the stereo depth noise", "--depth-noise"},
  };
  try {
    p.validate();
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    for (const auto& [field, flag] : kFlagOfField)
      if (what.compare(0, std::strlen(field), field) == 0) throw InvalidArgument(std::string(flag) + ": " + what);
    throw;
  }
}

/// The tracking mode, the depth range and scale, the volume (dense cube or sparse blocks).
void plan_sequence_and_volume(const Flags& f, Plan& plan) {
  fusion::FusionParams& p = plan.params;
  if (f.mode == "f2m")
    p.mode = fusion::TrackingMode::kFrameToModel;
  else if (f.mode == "f2f")
    p.mode = fusion::TrackingMode::kFrameToFrame;
  else
    throw InvalidArgument("--mode: `" + f.mode + "` is not f2m or f2f");
  if (!f.depth_scale.empty()) {
    try {
      plan.depth_scale = io::parse_depth_scale(f.depth_scale);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("--depth-scale: ") + e.what());
    }
  }
  if (!(std::isfinite(f.fps) && f.fps > 0.0)) throw InvalidArgument("--fps: must be > 0");
  p.depth.max_depth = static_cast<float>(f.max_depth);
  for (int a = 0; a < 3; ++a) {
    p.volume.resolution[a] = f.volume_resolution;
    p.volume.size[a] = static_cast<float>(f.volume_size);
  }
  p.volume.truncation = static_cast<float>(f.truncation);
  p.volume.truncation_growth = static_cast<float>(f.truncation_growth);
  if (f.volume == "sparse")
    p.volume.kind = fusion::VolumeKind::kSparse;
  else if (f.volume != "dense")
    throw InvalidArgument("--volume: `" + f.volume + "` is not sparse or dense");
  // 0 = the cube's voxel; any other value is the library's to check
  p.volume.sparse_voxel_size =
      static_cast<float>(f.voxel_size != 0.0 ? f.voxel_size : f.volume_size / f.volume_resolution);
  p.volume.sparse_memory_bytes = parse_bytes(f.max_memory);
  // The sparse ray cast reaches the deepest surface a depth limit lets in (the corner ray is longer than its
  // depth), else its default.
  if (f.max_depth > 0.0) p.volume.sparse_raycast_range = static_cast<float>(std::min(1e4, 1.5 * f.max_depth));
}

/// ICP: the robust and photometric terms, the motion prior and feature start, the loss tests, the pyramid.
void plan_tracking(const Flags& f, Plan& plan) {
  fusion::FusionParams& p = plan.params;
  p.icp.huber_delta = static_cast<float>(f.huber);
  p.icp.photometric_sigma = static_cast<float>(f.photometric);
  if (f.noise_weighting != "on" && f.noise_weighting != "off")
    throw InvalidArgument("--noise-weighting: `" + f.noise_weighting + "` is not on or off");
  p.icp.noise_weighting = f.noise_weighting == "on";
  if (f.motion_prior != "on" && f.motion_prior != "off")
    throw InvalidArgument("--motion-prior: `" + f.motion_prior + "` is not on or off");
  p.icp.motion_prior = f.motion_prior == "on";
  if (f.feature_start != "on" && f.feature_start != "off")
    throw InvalidArgument("--feature-start: `" + f.feature_start + "` is not on or off");
  p.icp.noise = parse_depth_noise(f.depth_noise);
  {
    const auto step = apps::split_list(f.max_step);
    char* end = nullptr;
    const double m = step.size() == 2 ? std::strtod(step[0].c_str(), &end) : -1.0;
    const bool m_ok = step.size() == 2 && end && *end == '\0';
    const double deg = step.size() == 2 ? std::strtod(step[1].c_str(), &end) : -1.0;
    const bool deg_ok = step.size() == 2 && end && *end == '\0';
    if (!m_ok || !deg_ok) throw InvalidArgument("--max-step: `" + f.max_step + "` is not METRES,DEGREES, e.g. 0.2,30");
    p.icp.max_translation_step = static_cast<float>(m);
    p.icp.max_rotation_step = static_cast<float>(deg);
  }
  p.icp.min_inlier_ratio = static_cast<float>(f.min_inliers);
  if (!(std::isfinite(f.max_lost) && f.max_lost >= 0.0 && f.max_lost <= 1.0))
    throw InvalidArgument("--max-lost: must be a fraction in [0, 1]");
  plan.max_lost = f.max_lost;
  plan.feature_start = f.feature_start == "on";
  const auto its = apps::split_list(f.icp_iterations);
  if (its.empty() || its.size() > 5)
    throw InvalidArgument("--icp-iterations: `" + f.icp_iterations + "`: give 1 to 5 counts, finest level first");
  p.icp.iterations = {0, 0, 0, 0, 0};
  for (std::size_t l = 0; l < its.size(); ++l) {
    if (its[l].find_first_not_of("0123456789") != std::string::npos || its[l].size() > 4)
      throw InvalidArgument("--icp-iterations: `" + its[l] + "` is not a count in [0, 1000]");
    p.icp.iterations[l] = std::stoi(its[l]);
  }
  if (p.icp.iterations[0] + p.icp.iterations[1] + p.icp.iterations[2] + p.icp.iterations[3] + p.icp.iterations[4] == 0)
    throw InvalidArgument("--icp-iterations: `" + f.icp_iterations + "`: no level has an iteration");
  p.depth.levels = static_cast<int>(its.size());
  p.initial_pose = fusion::FusionParams::kinfu_initial_pose(p.volume);
  validate_in_flags(p);
}

/// What is written (the trajectory always), colour, the frame range, the camera and images.
void plan_outputs(const Flags& f, Plan& plan) {
  fusion::FusionParams& p = plan.params;
  plan.emit_trajectory = plan.emit_mesh = plan.emit_cloud = plan.emit_plot = false;
  const auto emit = apps::split_list(f.emit);
  if (emit.empty()) throw InvalidArgument("--emit: name at least one of trajectory, mesh, cloud, plot");
  for (const auto& e : emit) {
    if (e == "trajectory")
      plan.emit_trajectory = true;
    else if (e == "mesh")
      plan.emit_mesh = true;
    else if (e == "cloud")
      plan.emit_cloud = true;
    else if (e == "plot")
      plan.emit_plot = true;
    else
      throw InvalidArgument("--emit: `" + e + "` is not trajectory, mesh, cloud or plot");
  }
  if (f.color == "auto")
    plan.color = Plan::Color::kAuto;
  else if (f.color == "on")
    plan.color = Plan::Color::kOn;
  else if (f.color == "off")
    plan.color = Plan::Color::kOff;
  else
    throw InvalidArgument("--color: `" + f.color + "` is not auto, on or off");
  // The trajectory is always written: it is what an interrupted run keeps, and what --eval scores.
  plan.emit_trajectory = true;
  // Frame to frame needs a model only for the outputs that show it.
  p.integrate = plan.emit_mesh || plan.emit_cloud;
  try {
    parse_frame_range(f.frames, &plan.first_frame, &plan.last_frame);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--frames: ") + e.what());
  }
  plan.intrinsics = f.intrinsics;
  plan.images = f.images;
  if (!f.images.empty() && !std::filesystem::is_directory(f.images))
    throw InvalidArgument("--images: `" + f.images + "` is not a folder");
  if (!f.intrinsics.empty()) {
    std::error_code ec;
    if (f.intrinsics != io::kTumDepthIntrinsics && !parse_inline_intrinsics(f.intrinsics) &&
        !std::filesystem::exists(f.intrinsics, ec))
      throw InvalidArgument("--intrinsics: `" + f.intrinsics +
                            "` is neither fx,fy,cx,cy nor an existing file (a K matrix, TUM or KITTI/Q calibration)");
  }
}

/// The evaluation against ground truth (ATE ranges, evo's alignment and relation), the trajectory format.
void plan_evaluation(const Flags& f, Plan& plan) {
  plan.eval = f.eval;
  for (const auto& r : apps::split_list(f.eval_ranges)) {
    std::size_t a = 0, b = 0;
    try {
      parse_frame_range(r, &a, &b);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("--eval-ranges: ") + e.what());
    }
    plan.eval_ranges.emplace_back(a, b);
  }
  if (!plan.eval_ranges.empty() && plan.eval.empty()) throw InvalidArgument("--eval-ranges: needs --eval");
  try {
    plan.evo.alignment = fusion::evo::parse_alignment(f.eval_align);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--eval-align: ") + e.what());
  }
  try {
    plan.evo.relation = fusion::evo::parse_pose_relation(f.eval_relation);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("--eval-relation: ") + e.what());
  }
  if (!(f.eval_max_diff > 0.0 && f.eval_max_diff <= 1e6))
    throw InvalidArgument("--eval-max-diff: " + std::to_string(f.eval_max_diff) + " is not a number of seconds > 0");
  plan.evo.max_difference = f.eval_max_diff;
  plan.save_results = f.save_results;
  if (!plan.save_results.empty() && plan.eval.empty()) throw InvalidArgument("--save-results: needs --eval");
  if (!plan.save_results.empty() && std::filesystem::path(plan.save_results).extension() != ".zip")
    throw InvalidArgument("--save-results: `" + plan.save_results + "` is not a .zip file name (evo_res reads .zip)");
  if (f.trajectory_format != "tum" && f.trajectory_format != "kitti")
    throw InvalidArgument("--trajectory-format: `" + f.trajectory_format + "` is not tum or kitti");
  plan.kitti_trajectory = f.trajectory_format == "kitti";
  plan.fps = f.fps;
}

}  // namespace

Plan make_plan(const Flags& f) {
  Plan plan;
  plan_sequence_and_volume(f, plan);
  plan_tracking(f, plan);
  plan_outputs(f, plan);
  plan_evaluation(f, plan);
  return plan;
}

}  // namespace s3d::icp_fuse
