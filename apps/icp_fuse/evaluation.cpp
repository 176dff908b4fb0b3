// icp-fuse's evaluation of a fused sequence against its ground truth: ATE (whole and per --eval-ranges) and RPE per
// frame and per second in the record, evo's blocks beside them, the results archive, and the human line.
#include "evaluation.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <tuple>

#include <spdlog/spdlog.h>

#include "../common/tool_files.hpp"
#include "evo_report.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::icp_fuse {
namespace {

std::mutex stdout_mutex;

nlohmann::json stats_json(const fusion::ErrorStats& s, double factor) {
  return {{"rmse", s.rmse * factor},
          {"mean", s.mean * factor},
          {"median", s.median * factor},
          {"max", s.max * factor},
          {"pairs", s.count}};
}

/// The ATE over each --eval-ranges range, each aligned on its own; appends "; frames A:B ATE RMSE .." to `line`.
nlohmann::json ate_ranges(const Fused& fused, const Plan& plan, const std::string& where, std::string& line) {
  const Sequence& seq = fused.sequence;
  nlohmann::json ranges = nlohmann::json::array();
  for (const auto& [a, b] : plan.eval_ranges) {
    fusion::EvalOptions o;
    std::tie(o.first_index, o.last_index) = fusion::trajectory_range(fused.frames, a, b);
    const std::string label =
        std::to_string(a) + ":" + (b == std::numeric_limits<std::size_t>::max() ? "" : std::to_string(b));
    nlohmann::json r = {{"frames", label}};
    try {
      const auto ate = fusion::evaluate_ate(*seq.ground_truth, fused.trajectory, o, where);
      r["ate_m"] = stats_json(ate.error, 1.0);
      char buf[96];
      std::snprintf(buf, sizeof buf, "; frames %s ATE RMSE %.4f m", label.c_str(), ate.error.rmse);
      line += buf;
    } catch (const DataError& e) {
      r["ate_m"] = nullptr;
      r["ate_error"] = e.what();
    }
    ranges.push_back(r);
  }
  return ranges;
}

}  // namespace

std::optional<fusion::evo::Result> record_evaluation(const cli::Item& item, const Fused& fused, cli::ItemContext& ctx,
                                                     const Plan& plan, const cli::CommonSettings& settings,
                                                     nlohmann::json& rec) {
  const Sequence& seq = fused.sequence;
  nlohmann::json ev;
  ev["groundtruth"] = seq.ground_truth_source;
  std::string line = item.name() + ":";
  const std::string where = item.name() + " vs " + seq.ground_truth_source;
  try {
    const auto ate = fusion::evaluate_ate(*seq.ground_truth, fused.trajectory, {}, where);
    ev["ate_m"] = stats_json(ate.error, 1.0);
    char buf[160];
    std::snprintf(buf, sizeof buf, " ATE RMSE %.4f m (%zu poses)", ate.error.rmse, ate.error.count);
    line += buf;
  } catch (const DataError& e) {
    ev["ate_m"] = nullptr;
    ev["ate_error"] = e.what();
    line += " ATE: not computed (" + std::string(e.what()) + ")";
  }
  // --eval-ranges: sequence frame indices -> positions in the trajectory (unreadable frames have none).
  if (!plan.eval_ranges.empty()) ev["ate_ranges"] = ate_ranges(fused, plan, where, line);
  const std::pair<double, fusion::DeltaUnit> deltas[2] = {{1.0, fusion::DeltaUnit::kFrames},
                                                          {1.0, fusion::DeltaUnit::kSeconds}};
  for (const auto& [delta, unit] : deltas) {
    const char* key = unit == fusion::DeltaUnit::kFrames ? "rpe_frame" : "rpe_second";
    const char* label = unit == fusion::DeltaUnit::kFrames ? "per frame" : "per second";
    try {
      const auto r = fusion::evaluate_rpe(*seq.ground_truth, fused.trajectory, delta, unit, {}, where);
      ev[key] = {{"delta", delta},
                 {"unit", unit == fusion::DeltaUnit::kFrames ? "frames" : "s"},
                 {"translation_m", stats_json(r.translation, 1.0)},
                 {"rotation_deg", stats_json(r.rotation, 1.0)}};
      char buf[160];
      std::snprintf(buf, sizeof buf, "; RPE %s %.2f mm / %.3f deg RMSE", label, r.translation.rmse * 1000.0,
                    r.rotation.rmse);
      line += buf;
    } catch (const DataError&) {
      ev[key] = nullptr;
    }
  }
  // evo's blocks (and its results archive), computed as evo_ape / evo_rpe would from these two files.
  // On the trajectory as its TUM text holds it (9 decimals), which is what evo reads.
  const fusion::Trajectory as_written =
      fusion::parse_tum_trajectory(fusion::format_tum_trajectory(fused.trajectory), "trajectory");
  const EvoReport evo = evo_report(*seq.ground_truth, as_written, plan.evo, where);
  ev["evo"] = evo.json;
  if (!plan.save_results.empty()) {
    if (evo.ape) {
      const std::string ref_name = std::filesystem::path(seq.ground_truth_source).stem().string();
      apps::write_file_atomically(ctx, (std::filesystem::path(fused.folder) / plan.save_results).string(),
                                  evo_results_zip(*evo.ape, ref_name.empty() ? "reference" : ref_name, item.name()));
    } else {
      spdlog::warn("{}: --save-results: no APE to save ({})", item.name(), evo.json["ape"].value("error", ""));
    }
  }
  rec["eval"] = ev;
  if (!settings.json && settings.report_path != "-") {
    std::lock_guard<std::mutex> lock(stdout_mutex);
    std::fprintf(stdout, "%s\n\n%s", line.c_str(), evo.text.c_str());
    std::fflush(stdout);
  }
  return evo.ape;
}

}  // namespace s3d::icp_fuse
