#pragma once
// The summary's "eval": accuracy over the evaluated items of a batch, from their records (so that the merge
// of a batch's shard reports, `sgm-depth report`, gives the same numbers as one process).
#include <nlohmann/json.hpp>

#include <vector>

namespace s3d::sgm_depth {

/// Adds "eval" to `summary` when any of `ok_items` has one:
/// {"items": N, "regions": {region: {"items": n, "mean_<metric>": ..., "pooled_<metric>": ...}}}.
/// mean_: the mean over items of the per-item value (Middlebury's per-image average); pooled_: every
/// evaluated pixel of the batch counted once (the *_all metrics and density weighted by the GT pixels, the
/// *_est ones by the estimated pixels; KITTI's devkit totals). Items whose region has no GT pixels are left
/// out of that region; *_est means count only items with estimated pixels.
void add_eval_summary(const std::vector<nlohmann::json>& ok_items, nlohmann::json& summary);

}  // namespace s3d::sgm_depth
