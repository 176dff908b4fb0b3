#pragma once
// --shard i/n|auto: which items of the full input order this process handles (docs/CLI.md, "Shards").
#include <cstddef>
#include <functional>
#include <string>

namespace s3d::cli {

/// One shard of a batch: this process handles the items k with k mod count == index.
struct Shard {
  int index = 0;  ///< 0 <= index < count
  int count = 1;  ///< >= 1; 1 = the whole batch

  /// True when the item at position `k` of the full input order belongs to this shard.
  bool contains(std::size_t k) const { return static_cast<int>(k % static_cast<std::size_t>(count)) == index; }
};

/// Reads an environment variable; nullptr when unset. Injected so the parser is testable.
using GetEnv = std::function<const char*(const char*)>;

/// Parses a --shard value.
/// - empty: the whole batch (0/1).
/// - `i/n`: shard i of n, 0 <= i < n.
/// - `auto`: from the scheduler's environment, first match wins:
///   1. Slurm job arrays: `SLURM_ARRAY_TASK_ID` with `SLURM_ARRAY_TASK_COUNT`; the index is
///      `SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN` (MIN defaults to 0), so `--array=1-8` works too.
///   2. Kubernetes indexed jobs: `JOB_COMPLETION_INDEX`, with the count from `shard_count` (--shard-count)
///      or else `S3D_SHARD_COUNT` (set it from the job's `completions`).
///   3. none of these: the whole batch (0/1), so the same command runs unchanged on a workstation.
/// `shard_count` (> 0) is only used by `auto`.
/// @throws InvalidArgument for a malformed value, i >= n, n < 1, or a variable that is not a number.
Shard parse_shard(const std::string& text, const GetEnv& getenv, int shard_count = 0);

/// parse_shard with the process environment.
Shard parse_shard(const std::string& text, int shard_count = 0);

}  // namespace s3d::cli
