#pragma once
// `TOOL report FILE...`: the --report files of one batch's shards, and of their re-runs, merged into one
// report of the whole batch (docs/CLUSTER.md, "Merging the reports").
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace s3d::cli {

/// A tool's dataset-level summary fields (accuracy over the batch, box totals) computed from the records
/// of its successful items, in index order. The frame calls the same function for a run's own summary and
/// for a merged one, so the merge of a batch's shards equals the summary of one process over the batch.
using Aggregate = std::function<void(const std::vector<nlohmann::json>& ok_items, nlohmann::json& summary)>;

/// An Aggregate that sums the numeric fields `keys` of the records, into the summary itself or, when `into` is
/// not empty, into its object `into`. Integers (however the record holds them: a run's own int64 or a parsed
/// report's unsigned) sum as integers, so a run and a merge give the same JSON. A key no record has is left
/// out, unless `always` (then 0).
Aggregate sum_of(std::vector<std::string> keys, std::string into = "", bool always = false);

struct MergedReport {
  std::vector<nlohmann::json> items;  ///< one record per item index found, in index order
  nlohmann::json summary;             ///< the merged summary record
  int exit_code = 0;                  ///< 0: every item of the batch ok or skipped; 1: failed or missing items
};

/// Merges JSON Lines reports of `tool`. Per item index the record kept is an "ok" one if any report has
/// one, else a "failed" one, else "skipped" (so a shard re-run with --skip-existing after a cancelled one
/// keeps the first attempt's results); among records of the same status, the last (in `paths` order, then
/// line order). An incomplete last line (a writer killed mid-line) is ignored with a warning.
/// @throws DataError naming the file (and line): unreadable, not JSON Lines, a report of another tool,
///         reports of batches of different sizes, the same index with different inputs, or no summary
///         record in any file (the batch size is then unknown).
MergedReport merge_reports(const std::vector<std::string>& paths, const std::string& tool,
                           const std::vector<Aggregate>& aggregates);

}  // namespace s3d::cli
