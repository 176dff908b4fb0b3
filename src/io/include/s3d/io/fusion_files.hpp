#pragma once
// A depth sequence's files joined to s3d::fusion's types: a listed frame read into what the sequence runner
// takes, the frames as the runner's sources, the ground truth of 7-Scenes pose files, and the per-frame records
// as JSON Lines (frames.jsonl; docs/ICP-FUSE.md, "Outputs"). Link s3d::fusion_files (not part of s3d::io,
// which links no domain library).
#include <string>
#include <vector>

#include "s3d/fusion/sequence.hpp"
#include "s3d/fusion/trajectory.hpp"
#include "s3d/io/rgbd_sequence.hpp"

namespace s3d::io {

/// The frame's depth in metres (read_depth_frame with `depth_scale`) and, when `color`, its colour image
/// (read_frame_color). What could not be read is the record's `error` / `color_error`, not an exception.
fusion::LoadedFrame read_rgbd_frame(const RgbdFrame& frame, double depth_scale, bool color);

/// The frames as fusion::fuse_sequence's sources (index, timestamp, depth file).
std::vector<fusion::FrameSource> frame_sources(const std::vector<RgbdFrame>& frames);

/// The poses of the frames that have a pose file (7-Scenes' frame-*.pose.txt), at the frames' timestamps.
/// @throws as fusion::read_pose_matrix.
fusion::Trajectory pose_files_trajectory(const std::vector<RgbdFrame>& frames);

/// frames.jsonl: one JSON object per record, each line ending in '\n': index, timestamp, file, status, and for a
/// processed frame valid_pixels, inliers, inlier_ratio, residual, condition, iterations, the stage times (ms),
/// reference "previous frame" and start "features" where they apply, reason, and with `color` whether its
/// colour was fused; for a frame not processed, status "error" with the reason.
std::string frames_jsonl(const std::vector<fusion::FrameRecord>& frames, bool color);

}  // namespace s3d::io
