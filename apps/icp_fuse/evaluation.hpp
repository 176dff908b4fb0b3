#pragma once
// icp-fuse's evaluation of a fused sequence against its ground truth (docs/ICP-FUSE.md, "Evaluation").
#include <optional>

#include <nlohmann/json.hpp>

#include "job.hpp"
#include "s3d/fusion/evo_metrics.hpp"

namespace s3d::icp_fuse {

/// rec["eval"]: the ground truth's source, ATE (whole, and per --eval-ranges), RPE per frame and per second, evo's
/// APE / RPE blocks; --save-results writes evo's archive; without --json the summary line and evo's blocks go to
/// stdout. Returns evo's APE (for --emit plot) when it could be computed.
std::optional<fusion::evo::Result> record_evaluation(const cli::Item& item, const Fused& fused, cli::ItemContext& ctx,
                                                     const Plan& plan, const cli::CommonSettings& settings,
                                                     nlohmann::json& rec);

}  // namespace s3d::icp_fuse
