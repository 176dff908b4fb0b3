#pragma once
// sgm-depth's stages after the load (sgm_depth/pair_input): the pair matched on the run's one pipeline in input
// order and evaluated (handle, main thread), and its outputs encoded and written with the record (write,
// worker threads).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depth_folder.hpp"
#include "matcher.hpp"
#include "pair_input.hpp"
#include "plan.hpp"
#include "s3d/cli/tool.hpp"

namespace s3d::sgm_depth {

/// What every item shares: the plan, the matcher (one pipeline per image size, reused), the depth folders
/// described so far.
struct Run {
  Plan plan;
  std::unique_ptr<DepthFolderFiles> depth_folders;
  std::unique_ptr<PairMatcher> matcher;  // declared last: destroyed (its pipeline drained) first
};

/// What the handler hands the writers: the match and what its outputs need.
struct PairOutput {
  Match match;
  std::shared_ptr<const io::StereoCalibration> calib;
  std::string left_path;
  io::ImageF gt;                     ///< --emit error: the ground truth (empty without one)
  std::vector<std::uint8_t> nonocc;  ///< and its non-occluded mask, when the dataset has one
  nlohmann::json record;
};

/// Makes the run's matcher on `devices` (--device: one, or several GPUs) within --max-memory.
void prepare_run(Run& run, const std::vector<Device>& devices, const cli::CommonSettings& settings);
/// Matches the pair (queuing the pairs of `next.ahead` first on a GPU), evaluates it against its ground truth (one line
/// on stderr without --json), and describes the depth folders its outputs go to.
PairOutput match_pair(const cli::Item& item, PairInput& in, cli::ItemContext& ctx, cli::NextItem<PairInput> next,
                      Run& run, const cli::CommonSettings& settings);
/// Writes each --emit output atomically; returns the record's fields.
nlohmann::json write_pair(const cli::Item& item, PairOutput& out, cli::ItemContext& ctx, const Run& run,
                          const cli::CommonSettings& settings);

}  // namespace s3d::sgm_depth
