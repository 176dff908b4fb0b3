#pragma once
// One icp-fuse item = one depth sequence. The stages of the frame (docs/CLI.md):
//   load   (a worker)        list the frames, read the ground truth, resolve the intrinsics' source;
//   handle (the main thread) track and fuse every frame on the run's device, reading and decoding the next
//                            frame while the current one is tracked; extract the mesh / cloud;
//   write  (a worker)        trajectory.txt, frames.jsonl, mesh.ply, cloud.ply (atomically), evaluation.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/fusion/fusion_engine.hpp"
#include "s3d/fusion/sequence.hpp"
#include "s3d/fusion/trajectory.hpp"
#include "s3d/io/rgbd_sequence.hpp"

namespace s3d::icp_fuse {

/// What the load stage found.
struct Sequence {
  io::RgbdSequence listing;           ///< all frames of the sequence
  std::vector<io::RgbdFrame> frames;  ///< those inside --frames
  std::string intrinsics_spec;        ///< what to read the intrinsics from
  /// Depth units per metre: --depth-scale, else what the listing states (TUM's header), else 0 (by format).
  double depth_scale = 0.0;
  std::optional<fusion::Trajectory> ground_truth;
  std::string ground_truth_source;  ///< a file, or "<folder>/frame-*.pose.txt"
};

/// What the handle stage produced: the library's fused sequence, where it goes, and what was listed.
struct Fused : fusion::FusedSequence {
  std::string folder;  ///< the output folder
  bool color = false;  ///< the model keeps colour (--color and the sequence's colour frames)
  Sequence sequence;
};

/// Intrinsics for a sequence without its own: a usage error before any item runs (exit 2) when a
/// positional sequence has neither --intrinsics nor a camera-intrinsics.txt.
std::string intrinsics_source(const io::RgbdSequence& listing, const cli::Item& item, const Plan& plan);

Sequence load_sequence(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan);
Fused fuse_sequence(const cli::Item& item, Sequence& seq, cli::ItemContext& ctx, const Plan& plan,
                    const cli::CommonSettings& settings);
nlohmann::json write_fused(const cli::Item& item, Fused& fused, cli::ItemContext& ctx, const Plan& plan,
                           const cli::CommonSettings& settings);

/// The summary's "eval" over the evaluated sequences: "sequences", "pairs", "ate_rmse_m" pooled over every
/// aligned pose of the batch (sqrt of the summed squared errors over the summed pairs; each sequence aligned on
/// its own), and "ate_rmse_mean_m" (the mean of the sequences' RMSEs). From the records, so `icp-fuse
/// report` gives the same over a batch's shards.
void add_eval_summary(const std::vector<nlohmann::json>& ok_items, nlohmann::json& summary);

}  // namespace s3d::icp_fuse
