#pragma once
// icp-fuse's evo-compatible evaluation: the APE and RPE blocks evo prints, their JSON, and the results archive
// `evo_res` reads (docs/ICP-FUSE.md, "Evaluation").
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "s3d/cli/tool.hpp"
#include "s3d/fusion/evo_metrics.hpp"

namespace s3d::icp_fuse {

struct EvoSettings {
  fusion::evo::Alignment alignment = fusion::evo::Alignment::kSE3;
  fusion::evo::PoseRelation relation = fusion::evo::PoseRelation::kTranslationPart;
  double max_difference = 0.01;  ///< seconds (evo --t_max_diff)
};

/// The APE, RPE per frame and RPE per metre of `estimate` against `reference`, as evo_ape / evo_rpe compute
/// them. A metric the trajectories cannot give (too few poses associate, a path shorter than 1 m) is left out,
/// its reason in the JSON.
struct EvoReport {
  std::string text;                        ///< the blocks, as evo prints them, separated by empty lines
  nlohmann::json json;                     ///< {"ape": {"title", "stats"} or {"error"}, "rpe_frame": .., "rpe_m": ..}
  std::optional<fusion::evo::Result> ape;  ///< for the results archive
};
EvoReport evo_report(const fusion::Trajectory& reference, const fusion::Trajectory& estimate,
                     const EvoSettings& settings, const std::string& where);

/// The bytes of evo's results archive (evo.tools.file_interface.save_res_file) for `result`: info.json,
/// stats.json, each array as .npy, the reference and the estimate as .tum.
std::string evo_results_zip(const fusion::evo::Result& result, const std::string& ref_name,
                            const std::string& est_name);

/// --emit plot: `folder`/trajectory.png (the estimate in its two main axes; evaluated, the aligned estimate
/// coloured by its APE over the reference, dashed) and, evaluated, `folder`/ape.png (the APE over time with
/// its rmse, mean and median), written atomically.
void write_plots(cli::ItemContext& ctx, const std::string& folder, const fusion::Trajectory& trajectory,
                 const fusion::evo::Result* ape);

}  // namespace s3d::icp_fuse
