// The first two stages of one sequence: list and check (load), track and fuse with a read-ahead (handle); the
// write stage is write.cpp.
#include "job.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "../common/tool_files.hpp"
#include "evaluation.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/fusion/feature_motion.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/fusion_files.hpp"
#include "s3d/io/image.hpp"

namespace s3d::icp_fuse {
namespace {

namespace fs = std::filesystem;

bool listed_images(const std::vector<io::RgbdFrame>& frames) {
  return std::any_of(frames.begin(), frames.end(), [](const io::RgbdFrame& f) { return !f.rgb_path.empty(); });
}

/// ICP's start where the engine knows no motion: the motion matched features give between the last good frame
/// and this one, from their colour images (read here when the reader left them out); none without them.
std::optional<Eigen::Isometry3d> feature_start(const io::RgbdFrame& last_frame, const fusion::LoadedFrame& last,
                                               const io::RgbdFrame& frame, const fusion::LoadedFrame& current,
                                               const fusion::CameraIntrinsics& camera,
                                               const fusion::FeatureMotionParams& params) {
  try {
    io::ImageU8 last_read, current_read;
    if (last.rgb.empty()) last_read = io::read_frame_color(last_frame, last.depth.width, last.depth.height);
    if (current.rgb.empty()) current_read = io::read_frame_color(frame, current.depth.width, current.depth.height);
    const fusion::FeatureMotion m =
        fusion::estimate_feature_motion(last.rgb.empty() ? last_read : last.rgb, last.depth,
                                        current.rgb.empty() ? current_read : current.rgb, camera, params);
    if (m.ok) return m.motion;
    spdlog::debug("{}: no feature start: {}", frame.depth_path, m.reason);
  } catch (const Error& e) {
    spdlog::debug("{}: no feature start: {}", frame.depth_path, e.what());
  }
  return std::nullopt;
}

/// Whether the model keeps colour: --color, the outputs that would show it, the frames that have it.
bool wants_color(const Plan& plan, const std::vector<io::RgbdFrame>& frames, const std::string& name) {
  if (plan.color == Plan::Color::kOff || !(plan.emit_mesh || plan.emit_cloud)) return false;
  const bool listed = listed_images(frames);
  if (!listed && plan.color == Plan::Color::kOn)
    throw DataError(name +
                    ": --color on, but the sequence lists no colour images (rgb.txt, frame-*.color.*, --images)");
  return listed;
}

/// fx,fy,cx,cy inline (any sign of fy, for ICL-NUIM's -480), else what s3d::io reads: a K file, TUM
/// `fx fy cx cy`, key=value, or a stereo calibration's left camera for a width x height image.
fusion::CameraIntrinsics read_camera(const std::string& spec, int width, int height) {
  std::error_code ec;
  if (!fs::exists(spec, ec))
    if (auto inline_camera = parse_inline_intrinsics(spec)) return *inline_camera;
  const io::PinholeIntrinsics k = io::read_intrinsics(spec, width, height);
  if (k.width > 0 && k.height > 0 && (k.width != width || k.height != height))
    throw DataError(spec + ": intrinsics for " + std::to_string(k.width) + "x" + std::to_string(k.height) +
                    " but the frames are " + std::to_string(width) + "x" + std::to_string(height));
  return {static_cast<float>(k.fx), static_cast<float>(k.fy), static_cast<float>(k.cx), static_cast<float>(k.cy)};
}

std::optional<std::string> string_field(const cli::Item& item, const char* key) {
  if (item.fields.is_object() && item.fields.contains(key) && item.fields[key].is_string())
    return item.fields[key].get<std::string>();
  return std::nullopt;
}

std::string fraction_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// A sequence whose tracking the data does not support fails: more than `max_lost` of its processed frames
/// lost. The message says how many, from where, and what to try.
void check_tracking(const std::string& name, const std::vector<fusion::FrameRecord>& frames, double max_lost) {
  const fusion::TrackingSummary t = fusion::summarize_tracking(frames);
  if (t.supported(max_lost)) return;
  // No frame with depth to track: a trajectory of identity poses would be no result at all.
  if (t.lost == 0)
    throw DataError(name + ": none of its " + std::to_string(t.processed) +
                    " frames has enough valid depth (pixels 0, or beyond --max-depth): nothing was tracked");
  throw DataError(name + ": tracking lost on " + std::to_string(t.lost) + " of " + std::to_string(t.processed) +
                  " frames (more than --max-lost " + fraction_text(max_lost) + "), the first at frame " +
                  std::to_string(t.first_lost->source.index) + ": " + t.first_lost->result.reason +
                  "; try --mode f2f, a larger --volume-size, --depth-noise stereo:B for stereo depth, --max-step for "
                  "fast motion (--max-lost 1 writes the outputs anyway)");
}

}  // namespace

std::string intrinsics_source(const io::RgbdSequence& listing, const cli::Item& item, const Plan& plan) {
  if (!plan.intrinsics.empty()) return plan.intrinsics;
  if (auto k = string_field(item, "intrinsics")) return *k;
  if (!listing.intrinsics_path.empty()) return listing.intrinsics_path;
  if (listing.layout == "tum") return io::kTumDepthIntrinsics;  // the benchmark's own conversion of its depth
  throw InvalidArgument(item.inputs[0] +
                        ": no camera intrinsics: pass --intrinsics fx,fy,cx,cy (or a 3x3 K file, or a KITTI/Q "
                        "calibration); the sequence has no camera-intrinsics.txt");
}

Sequence load_sequence(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan) {
  Sequence seq;
  const std::string path = ctx.readable_path(item.inputs[0]);
  // A list on stdin: its paths are relative to the working directory, not to the copy's folder.
  seq.listing = item.inputs[0] == "-" ? io::list_rgbd_sequence_from_copy(path, "-", plan.fps)
                                      : io::list_rgbd_sequence(path, plan.fps);
  if (!plan.images.empty()) io::attach_images(plan.images, seq.listing, item.inputs[0]);
  seq.frames = io::frames_in_range(seq.listing.frames, plan.first_frame, plan.last_frame);
  if (seq.frames.empty())
    throw DataError(item.inputs[0] + ": --frames selects none of its " + std::to_string(seq.listing.frames.size()) +
                    " frames");
  seq.intrinsics_spec = intrinsics_source(seq.listing, item, plan);
  seq.depth_scale = plan.depth_scale > 0.0 ? plan.depth_scale : seq.listing.depth_scale;
  if (plan.depth_scale <= 0.0 && seq.listing.depth_scale > 0.0)
    spdlog::info("{}: depth scale {} (TUM RGB-D depth.txt header; --depth-scale overrides)", item.inputs[0],
                 seq.listing.depth_scale);
  if (!plan.eval.empty()) {
    std::string gt = plan.eval;
    if (plan.eval == "auto") {
      gt = string_field(item, "groundtruth").value_or(seq.listing.groundtruth_path);
      const auto& all = seq.listing.frames;
      const auto without =
          std::count_if(all.begin(), all.end(), [](const io::RgbdFrame& f) { return f.pose_path.empty(); });
      if (gt.empty() && without < static_cast<std::ptrdiff_t>(all.size())) {
        // Frames without a pose file are left out of the evaluation, not the whole sequence.
        if (without > 0) {
          const auto first =
              std::find_if(all.begin(), all.end(), [](const io::RgbdFrame& f) { return f.pose_path.empty(); });
          spdlog::warn("{}: --eval auto: {} of {} frames have no pose file (the first: {}); evaluated without them",
                       item.inputs[0], without, all.size(), first->depth_path);
        }
        seq.ground_truth = io::pose_files_trajectory(all);
        seq.ground_truth_source = (fs::path(path) / "frame-*.pose.txt").string();
      } else if (gt.empty()) {
        spdlog::warn("{}: --eval auto: no groundtruth.txt or pose files; not evaluated", item.inputs[0]);
      }
    }
    if (!gt.empty()) {
      seq.ground_truth = fusion::read_tum_trajectory(gt);
      seq.ground_truth_source = gt;
    }
  }
  return seq;
}

Fused fuse_sequence(const cli::Item& item, Sequence& seq, cli::ItemContext& ctx, const Plan& plan,
                    const cli::CommonSettings& settings) {
  const std::vector<io::RgbdFrame>& frames = seq.frames;
  const bool color = wants_color(plan, frames, item.inputs[0]);
  const bool photometric = plan.params.icp.photometric_sigma > 0.0f;
  if (photometric && !listed_images(frames))
    throw DataError(item.inputs[0] +
                    ": --photometric needs the frames' images, and the sequence lists none (rgb.txt, "
                    "frame-*.color.*; or pass --images DIR)");
  const bool images = color || photometric;
  fusion::SequenceOptions options;
  options.params = plan.params;
  options.params.volume.color = color;
  options.extract_mesh = plan.emit_mesh;
  options.extract_cloud = plan.emit_cloud;
  options.name = item.inputs[0];
  const std::vector<fusion::FrameSource> sources = io::frame_sources(frames);
  fusion::SequenceCallbacks callbacks;
  const double depth_scale = seq.depth_scale;
  callbacks.read = [&frames, depth_scale, images](std::size_t k) {
    return io::read_rgbd_frame(frames[k], depth_scale, images);
  };
  callbacks.camera = [&seq](int width, int height) { return read_camera(seq.intrinsics_spec, width, height); };
  callbacks.interrupted = [] { return cli::interrupt_requested(); };
  if (plan.feature_start && listed_images(frames)) {
    fusion::FeatureMotionParams features;
    features.min_depth = plan.params.depth.min_depth;
    features.max_depth = plan.params.depth.max_depth;
    callbacks.motion = [&frames, features](std::size_t last_k, const fusion::LoadedFrame& last, std::size_t k,
                                           const fusion::LoadedFrame& current, const fusion::CameraIntrinsics& camera) {
      return feature_start(frames[last_k], last, frames[k], current, camera, features);
    };
  }
  const std::string name = item.name();
  callbacks.on_frame = [&name, images, photometric](const fusion::FrameRecord& rec) {
    if (!rec.processed) {
      spdlog::warn("{} (frame {} skipped)", rec.error, rec.source.index);
      return;
    }
    if (images && !rec.color_error.empty())
      spdlog::warn("{} (frame {} {})", rec.color_error, rec.source.index,
                   photometric ? "tracked on depth alone and fused without colour" : "fused without colour");
    spdlog::debug("{}: frame {}: {}{}{}", name, rec.source.index, fusion::to_string(rec.result.status),
                  rec.result.reason.empty() ? "" : ": ", rec.result.reason);
  };
  callbacks.on_frames_done = [&](const fusion::FusedSequence& fused) {
    ctx.add_stage_seconds("track", fused.track_seconds);
    check_tracking(item.inputs[0], fused.frames, plan.max_lost);
  };
  Fused out;
  out.folder = output_folder(item, ctx, settings);
  out.color = color;
  static_cast<fusion::FusedSequence&>(out) = fusion::fuse_sequence(ctx.device(), sources, options, callbacks);
  if (out.interrupted) ctx.add_stage_seconds("track", out.track_seconds);
  if (!out.interrupted) ctx.add_stage_seconds("extract", out.extract_seconds);
  out.sequence = std::move(seq);
  return out;
}

}  // namespace s3d::icp_fuse
