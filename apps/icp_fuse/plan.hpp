#pragma once
// icp-fuse's flags turned into the library's parameters and the item's output files (docs/ICP-FUSE.md).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "evo_report.hpp"
#include "flag_values.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/fusion/params.hpp"

namespace s3d::icp_fuse {

/// The tool's own flags as given (strings where the CLI accepts words or lists).
struct Flags {
  std::string mode = "f2m";
  std::string depth_scale;  ///< empty: by the frame's format (1000 PNG, 1 PFM)
  std::string intrinsics;   ///< fx,fy,cx,cy | K file | calibration; empty: the folder's camera-intrinsics.txt
  double max_depth = 0.0;
  std::string volume = "dense";  ///< dense | sparse
  double volume_size = 3.0;
  int volume_resolution = 512;
  double voxel_size = 0.0;          ///< sparse voxel edge, metres; 0: volume_size / volume_resolution
  std::string max_memory = "512M";  ///< sparse block pool, bytes with an optional K/M/G suffix
  double truncation = 0.03;
  double truncation_growth = 0.01;
  std::string icp_iterations = "10,5,4";
  double huber = 0.0;
  double photometric = 0.0;                  ///< grey-level sigma of the photometric term; 0 = off
  std::string images;                        ///< a folder of the frames' images, one per depth frame in name order
  std::string noise_weighting = "on";        ///< on | off
  std::string depth_noise = "kinect";        ///< kinect | stereo:BASELINE_M[,DISPARITY_SIGMA_PX]
  std::string motion_prior = "on";           ///< on | off
  std::string feature_start = "on";          ///< on | off
  std::string max_step = "0.2,30";           ///< metres,degrees from the prediction
  double min_inliers = 0.2;                  ///< inlier ratio below which a frame is lost
  double max_lost = 0.1;                     ///< fraction of lost frames above which a sequence fails
  std::string eval;                          ///< ground-truth file or `auto`; empty: no evaluation
  std::string eval_ranges;                   ///< `A:B,C:D`: ATE also over these frame ranges (each aligned on its own)
  std::string eval_align = "se3";            ///< none | se3 | sim3 (evo -a / -as)
  std::string eval_relation = "trans_part";  ///< evo --pose_relation
  double eval_max_diff = 0.01;               ///< seconds, evo --t_max_diff
  std::string save_results;                  ///< evo results archive (.zip), in each sequence's folder when relative
  std::string trajectory_format = "tum";     ///< tum | kitti
  std::string frames;
  std::string emit = "trajectory,mesh";
  std::string color = "auto";  ///< auto | on | off
  double fps = 30.0;
};

/// Everything the items need, fixed before the first item runs.
struct Plan {
  fusion::FusionParams params;  ///< camera filled per sequence
  double depth_scale = 0.0;     ///< units per metre; 0 = by format
  std::string intrinsics;
  std::string images;  ///< --images: empty = the sequence's own colour frames
  std::string eval;
  /// ATE also over these [first, last) ranges of sequence frame indices (--eval-ranges).
  std::vector<std::pair<std::size_t, std::size_t>> eval_ranges;
  EvoSettings evo;                ///< the evo blocks' alignment, pose relation and association window
  std::string save_results;       ///< empty: no results archive
  bool kitti_trajectory = false;  ///< trajectory.txt as KITTI 3x4 poses instead of TUM lines
  std::size_t first_frame = 0;    ///< --frames A:B, half-open [A, B)
  std::size_t last_frame = std::numeric_limits<std::size_t>::max();
  bool emit_trajectory = true, emit_mesh = true, emit_cloud = false;
  bool emit_plot = false;  ///< trajectory.png (and, evaluated, ape.png)
  /// Vertex colours from the sequence's colour frames: kAuto when it lists any, kOn required, kOff never.
  enum class Color { kAuto, kOn, kOff } color = Color::kAuto;
  double fps = 30.0;
  /// Where no motion is known (the first step, after lost frames), ICP starts from matched ORB features.
  bool feature_start = true;
  /// A sequence with more than this fraction of its processed frames lost is a failed item.
  double max_lost = 0.1;
};

/// Checks the flags and builds the plan. @throws InvalidArgument naming the flag (exit 2).
Plan make_plan(const Flags& flags);

/// The folder an item writes into: -o (a path or template), else --output-dir/NAME where NAME is the
/// manifest's "name" or the sequence's folder name (a list file: its name without extension).
std::string output_folder(const cli::Item& item, cli::ItemContext& ctx, const cli::CommonSettings& settings);

/// The files an item writes, in order: trajectory.txt, frames.jsonl, mesh.ply, cloud.ply (as --emit asks), the
/// --save-results archive, then trajectory.png and ape.png (--emit plot).
std::vector<std::string> planned_outputs(const std::string& folder, const Plan& plan);

}  // namespace s3d::icp_fuse
