#include "s3d/io/fusion_files.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

nlohmann::json frame_json(const fusion::FrameRecord& f, bool color) {
  nlohmann::json j;
  j["index"] = f.source.index;
  j["timestamp"] = f.source.timestamp;
  j["file"] = f.source.file;
  if (!f.processed) {
    j["status"] = "error";
    j["reason"] = f.error;
    j["ms"] = {{"read", f.read_ms}, {"wait", f.wait_ms}};
    return j;
  }
  const fusion::FrameResult& r = f.result;
  j["status"] = fusion::to_string(r.status);
  j["valid_pixels"] = r.valid_pixels;
  j["inliers"] = r.inliers;
  j["inlier_ratio"] = r.inlier_ratio;
  j["residual"] = r.residual;
  j["condition"] = r.condition;
  j["iterations"] = r.iterations;
  if (r.frame_fallback) j["reference"] = "previous frame";
  if (r.motion_start) j["start"] = "features";
  j["ms"] = {{"read", f.read_ms},   {"wait", f.wait_ms},           {"preprocess", r.preprocess_ms},
             {"track", r.track_ms}, {"integrate", r.integrate_ms}, {"raycast", r.raycast_ms}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.volume_blocks > 0) j["blocks"] = r.volume_blocks;
  if (r.volume_blocks_refused > 0) j["blocks_refused"] = r.volume_blocks_refused;
  if (color) {
    j["color"] = f.color;
    if (!f.color_error.empty()) j["color_error"] = f.color_error;
  }
  return j;
}

}  // namespace

fusion::LoadedFrame read_rgbd_frame(const RgbdFrame& frame, double depth_scale, bool color) {
  fusion::LoadedFrame f;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    f.depth = read_depth_frame(frame.depth_path, depth_scale);
  } catch (const Error& e) {
    f.error = e.what();
  }
  if (color && f.error.empty()) {
    try {
      f.rgb = read_frame_color(frame, f.depth.width, f.depth.height);
    } catch (const Error& e) {
      f.color_error = e.what();
    }
  }
  f.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return f;
}

std::vector<fusion::FrameSource> frame_sources(const std::vector<RgbdFrame>& frames) {
  std::vector<fusion::FrameSource> sources;
  sources.reserve(frames.size());
  for (const auto& f : frames) sources.push_back({f.index, f.timestamp, f.depth_path});
  return sources;
}

fusion::Trajectory pose_files_trajectory(const std::vector<RgbdFrame>& frames) {
  fusion::Trajectory t;
  for (const auto& f : frames)
    if (!f.pose_path.empty()) t.push_back({f.timestamp, fusion::read_pose_matrix(f.pose_path)});
  return t;
}

std::string frames_jsonl(const std::vector<fusion::FrameRecord>& frames, bool color) {
  std::string text;
  for (const auto& f : frames) text += frame_json(f, color).dump() + "\n";
  return text;
}

}  // namespace s3d::io
