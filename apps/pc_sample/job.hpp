#pragma once
// pc-sample's stages: a cloud read and put in local coordinates (load, worker threads), the sampling or the
// neighbour search on the run's one engine (handle, main thread, input order), and the outputs written with
// the item's record (write, worker threads).
#include <nlohmann/json.hpp>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cloud_input.hpp"
#include "plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/fps_pipeline.hpp"
#include "s3d/points/neighbors.hpp"
#include "s3d/points/rulebook.hpp"
#include "s3d/points/voxels.hpp"

namespace s3d::pc_sample {

struct Command;

/// What every item shares: the plan, its subcommand, the engine (made once per run), and the second cloud
/// (--queries, --from) read once.
struct Run {
  Plan plan;
  const Command* command = nullptr;  ///< the plan's subcommand (command.hpp)
  std::unique_ptr<points::FpsEngine> fps;
  std::unique_ptr<points::FpsPipeline> fps_batches;  ///< fps --batch B > 1: groups with copies overlapping
  std::deque<std::vector<std::size_t>> fps_queued;   ///< the item indices of each group in flight, oldest first
  std::unique_ptr<points::NeighborEngine> neighbors;
  std::unique_ptr<points::VoxelEngine> voxels;
  std::unique_ptr<points::RulebookEngine> rulebooks;
  std::optional<InputCloud> other;
  std::vector<std::string> interp_columns;  ///< interp: the sparse columns interpolated (explicit list only)
};

/// One input cloud, ready for the engine.
struct Job {
  InputCloud in;
  std::array<double, 3> origin{};
  std::vector<float> local;        ///< the input's positions relative to `origin` (voxel: origin 0, the file's)
  std::vector<float> other_local;  ///< the queries / sparse cloud relative to the same origin
  std::vector<std::string> outputs;
  points::SparseCoords coords;  ///< rulebook: the input voxels (read from .npy, or voxelised in compute)
  double seconds_read = 0.0;
};

/// The engine's answer for one job.
struct Result {
  Job job;
  std::vector<std::int32_t> selection;  ///< fps: rows of job.in.cloud in selection order
  std::int64_t start = 0;               ///< fps: the first index (a row of job.in.cloud)
  points::Neighbors neighbors;
  points::Interpolation weights;
  points::Voxels voxels;
  std::vector<points::LayerRulebook> layers;  ///< rulebook
  double seconds_compute = 0.0;
  int batch = 1;       ///< fps: clouds in the launch that computed this one
  bool taken = false;  ///< fps --batch: computed in an earlier item's launch (its handle never ran)
};

/// fps: M and the start of one item (--start names a row of the file). @throws DataError naming the input.
std::pair<std::int64_t, std::int64_t> fps_samples_and_start(const cli::Item& item, const Plan& p, const Job& job);
/// rulebook: reads `path`, an int32 .npy of shape [M, 4] (batch, z, y, x); points::coords_from_rows checks the
/// values. @throws DataError naming `name` (not an .npy, another dtype or shape, truncated).
std::vector<std::int32_t> read_coords_npy(const std::string& path, const std::string& name);

/// Reads --queries / --from and checks the interp attribute list (on_start: an error is a usage error).
void prepare_run(Run& run, const Device& device);
/// Reads the item's input into a cloud from `clouds` (reusing its storage; the write stage gives it back).
Job load_job(const cli::Item& item, cli::ItemContext& ctx, const Run& run, CloudPool& clouds);
/// The subcommand's compute. @throws DataError naming the input for M > N, K > N, a start outside the cloud.
Result compute(const cli::Item& item, Run& run, Job job);
/// fps --batch B: this item and up to B - 1 of the loaded items after it in one FpsEngine launch, their results
/// in order (the frame's group handler); other modes and B = 1: compute() of this item alone. Items whose M or
/// start is invalid end the group and fail alone.
std::vector<Result> compute_group(const cli::Item& item, Run& run, Job job, const cli::NextItem<Job>& next);
/// Writes the outputs; returns the record's fields.
nlohmann::json write_result(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r);

}  // namespace s3d::pc_sample
