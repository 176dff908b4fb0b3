#pragma once
// --shard i/n|auto: which items of the full input order this process handles (docs/CLI.md, "Shards";
// docs/CLUSTER.md for the schedulers).
#include <cstddef>
#include <functional>
#include <string>

namespace s3d::cli {

/// One shard of a batch: this process handles the items k with k mod count == index.
struct Shard {
  int index = 0;  ///< 0 <= index < count
  int count = 1;  ///< >= 1; 1 = the whole batch
  /// Where index and count came from: "none" (no --shard), "flag" (--shard i/n), or for --shard auto
  /// "slurm-array", "slurm-step", "slurm-array+step", "kubernetes", "gnu-parallel", "auto-none" (no
  /// scheduler variable set: the whole batch). The summary record reports it.
  std::string source = "none";

  /// True when the item at position `k` of the full input order belongs to this shard.
  bool contains(std::size_t k) const { return static_cast<int>(k % static_cast<std::size_t>(count)) == index; }
};

/// Reads an environment variable; nullptr when unset. Injected so the parser is testable.
using GetEnv = std::function<const char*(const char*)>;

/// Parses a --shard value.
/// - empty: the whole batch (0/1).
/// - `i/n`: shard i of n, 0 <= i < n.
/// - `auto`: from the scheduler's environment, first match wins:
///   1. Slurm: a job array (`SLURM_ARRAY_TASK_ID` - `SLURM_ARRAY_TASK_MIN` of `SLURM_ARRAY_TASK_COUNT`)
///      and/or the tasks of an `srun` step (`SLURM_PROCID` of `SLURM_STEP_NUM_TASKS`). Both together
///      (`srun -n T` inside each of A array tasks) give shard `array * T + procid` of `A * T`. The batch
///      script itself (where `SLURM_PROCID` is 0 and `SLURM_NTASKS` counts the whole allocation) is not a
///      step: only `SLURM_STEP_NUM_TASKS`, which srun sets, counts tasks, so running the tool once in an
///      `--ntasks=4` script never silently handles a quarter of the batch. With `shard_count` (or
///      `S3D_SHARD_COUNT`) the array part is shard `SLURM_ARRAY_TASK_ID` of that count instead, so that one
///      task re-submitted alone (`sbatch --array=3`, whose own array has one task) is still shard 3 of N.
///   2. Kubernetes indexed jobs: `JOB_COMPLETION_INDEX`.
///   3. GNU parallel: `PARALLEL_SEQ` (1-based job number), shard `PARALLEL_SEQ - 1`.
///   For 2 and 3 the count comes from `shard_count` (--shard-count) or else `S3D_SHARD_COUNT`.
///   4. none of these: the whole batch (0/1), so the same command runs unchanged on a workstation.
/// `shard_count` (> 0; else S3D_SHARD_COUNT when set) is only used by `auto`.
/// @throws InvalidArgument for a malformed value, i >= n, n < 1, or a variable that is not a number.
Shard parse_shard(const std::string& text, const GetEnv& getenv, int shard_count = 0);

/// parse_shard with the process environment.
Shard parse_shard(const std::string& text, int shard_count = 0);

}  // namespace s3d::cli
