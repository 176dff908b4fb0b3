// The write stage of one sequence: trajectory, frame records, mesh and cloud (atomically), the item's record
// and its evaluation; and the batch summary's evaluation.
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "../common/tool_files.hpp"
#include "evaluation.hpp"
#include "job.hpp"
#include "s3d/io/fusion_files.hpp"
#include "s3d/io/ply.hpp"

namespace s3d::icp_fuse {
namespace {

void write_ply_atomically(cli::ItemContext& ctx, const std::string& path, const PointCloud& cloud) {
  ctx.write_atomically(path, [&](const std::string& tmp) { io::write_ply(tmp, cloud); });
}

}  // namespace

nlohmann::json write_fused(const cli::Item& item, Fused& fused, cli::ItemContext& ctx, const Plan& plan,
                           const cli::CommonSettings& settings) {
  cli::StageTimer timer(ctx, "write");
  const auto paths = planned_outputs(fused.folder, plan);
  nlohmann::json rec;
  rec["output_folder"] = fused.folder;
  apps::write_file_atomically(ctx, paths[0],
                              plan.kitti_trajectory ? fusion::format_kitti_poses(fused.trajectory)
                                                    : fusion::format_tum_trajectory(fused.trajectory));
  const fusion::TrackingSummary summary = fusion::summarize_tracking(fused.frames);
  // frames.jsonl marks a finished sequence: an interrupted one keeps only its trajectory, so that
  // --skip-existing redoes it.
  if (!fused.interrupted) {
    apps::write_file_atomically(ctx, paths[1], io::frames_jsonl(fused.frames, fused.color));
    std::size_t slot = 2;
    if (fused.mesh) {
      write_ply_atomically(ctx, paths[slot++], fusion::mesh_to_cloud(*fused.mesh));
      rec["mesh"] = {{"vertices", fused.mesh->vertices.size() / 3}, {"triangles", fused.mesh->triangles.size() / 3}};
      if (fused.mesh->vertices.empty()) {
        const std::string why = "the mesh is empty: no surface was fused inside the volume (see --volume-size)";
        spdlog::warn("{}: {}", item.inputs[0], why);
        rec["warnings"].push_back(why);
      }
    }
    if (fused.cloud) {
      write_ply_atomically(ctx, paths[slot++], fusion::surface_to_cloud(*fused.cloud));
      rec["cloud"] = {{"points", fused.cloud->points.size() / 3}};
    }
  } else {
    rec["interrupted"] = true;
    ctx.mark_interrupted();
  }
  const auto& seq = fused.sequence;
  rec["layout"] = seq.listing.layout;
  rec["timestamps"] = seq.listing.timestamps_from_index ? "index/fps" : "list";
  if (seq.depth_scale > 0.0) rec["depth_scale"] = seq.depth_scale;
  rec["frames"] = seq.frames.size();
  rec["frames_done"] = fused.frames.size();
  rec["first"] = summary.first;
  rec["tracked"] = summary.tracked;
  rec["recovered"] = summary.recovered;
  rec["lost"] = summary.lost;
  rec["invalid"] = summary.invalid;
  rec["unreadable"] = summary.unreadable;
  if (plan.params.mode == fusion::TrackingMode::kFrameToModel) rec["tracked_by_frame"] = summary.by_previous_frame;
  if (plan.params.volume.kind == fusion::VolumeKind::kSparse) {
    rec["volume_blocks"] = summary.volume_blocks;
    rec["volume_blocks_refused"] = summary.volume_blocks_refused;
    if (summary.first_refused) {
      const std::string why = "the sparse volume's memory (--max-memory) was full from frame " +
                              std::to_string(summary.first_refused->source.index) + " (" +
                              std::to_string(summary.volume_blocks) +
                              " blocks): " + std::to_string(summary.volume_blocks_refused) +
                              " block requests refused, surfaces there not fused; raise --max-memory";
      spdlog::warn("{}: {}", item.inputs[0], why);
      rec["warnings"].push_back(why);
    }
  }
  rec["color"] = fused.color;
  if (fused.color) rec["color_frames"] = summary.color;
  rec["width"] = fused.width;
  rec["height"] = fused.height;
  rec["intrinsics"] = {{"fx", fused.camera.fx},
                       {"fy", fused.camera.fy},
                       {"cx", fused.camera.cx},
                       {"cy", fused.camera.cy},
                       {"source", seq.intrinsics_spec}};
  const std::size_t processed = fused.trajectory.size();
  rec["ms_per_frame"] = processed ? summary.compute_ms / static_cast<double>(processed) : 0.0;

  std::optional<fusion::evo::Result> ape_for_plots;
  if (seq.ground_truth && !fused.trajectory.empty())
    ape_for_plots = record_evaluation(item, fused, ctx, plan, settings, rec);
  if (plan.emit_plot) write_plots(ctx, fused.folder, fused.trajectory, ape_for_plots ? &*ape_for_plots : nullptr);
  return rec;
}

void add_eval_summary(const std::vector<nlohmann::json>& ok_items, nlohmann::json& summary) {
  std::size_t sequences = 0;
  std::uint64_t pairs = 0;
  double squared_sum = 0.0, rmse_sum = 0.0;
  for (const auto& item : ok_items) {
    const auto eval = item.find("eval");
    if (eval == item.end() || !eval->is_object()) continue;
    const auto ate = eval->find("ate_m");
    if (ate == eval->end() || !ate->is_object()) continue;
    const auto rmse_field = ate->find("rmse");
    const auto pairs_field = ate->find("pairs");
    if (rmse_field == ate->end() || !rmse_field->is_number() || pairs_field == ate->end() ||
        !pairs_field->is_number_integer())
      continue;  // not computed (a NaN is written as null)
    const double rmse = rmse_field->get<double>();
    const std::uint64_t n = pairs_field->get<std::uint64_t>();
    ++sequences;
    pairs += n;
    squared_sum += rmse * rmse * static_cast<double>(n);
    rmse_sum += rmse;
  }
  if (sequences == 0) return;
  summary["eval"] = {{"sequences", sequences},
                     {"pairs", pairs},
                     {"ate_rmse_m", pairs ? std::sqrt(squared_sum / static_cast<double>(pairs)) : 0.0},
                     {"ate_rmse_mean_m", rmse_sum / static_cast<double>(sequences)}};
}

}  // namespace s3d::icp_fuse
