#include "evo_report.hpp"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/plots.hpp"
#include "s3d/io/zip.hpp"

namespace s3d::icp_fuse {
namespace {

namespace evo = fusion::evo;

nlohmann::json stats_json(const evo::Statistics& s) {
  return {{"max", s.max},   {"mean", s.mean}, {"median", s.median}, {"min", s.min},
          {"rmse", s.rmse}, {"sse", s.sse},   {"std", s.std}};
}

std::string one_line(std::string title) {
  std::replace(title.begin(), title.end(), '\n', ' ');
  return title;
}

std::string npy_of(const std::vector<double>& v) {
  return io::npy_bytes(v.data(), "<f8", {static_cast<std::int64_t>(v.size())});
}

}  // namespace

EvoReport evo_report(const fusion::Trajectory& reference, const fusion::Trajectory& estimate,
                     const EvoSettings& settings, const std::string& where) {
  EvoReport report;
  auto add = [&](const char* key, auto&& compute) {
    try {
      evo::Result r = compute();
      report.json[key] = {
          {"title", r.title}, {"label", r.label}, {"stats", stats_json(r.stats)}, {"count", r.errors.size()}};
      if (!report.text.empty()) report.text += "\n";
      report.text += evo::format_block(r);
      return std::optional<evo::Result>(std::move(r));
    } catch (const DataError& e) {
      report.json[key] = {{"error", e.what()}};
      return std::optional<evo::Result>();
    }
  };
  report.ape = add("ape", [&] {
    return evo::ape(reference, estimate, settings.relation, settings.alignment, settings.max_difference, where);
  });
  add("rpe_frame", [&] {
    return evo::rpe(reference, estimate, settings.relation, settings.alignment, 1.0, evo::DeltaUnit::kFrames,
                    settings.max_difference, where);
  });
  add("rpe_m", [&] {
    return evo::rpe(reference, estimate, settings.relation, settings.alignment, 1.0, evo::DeltaUnit::kMeters,
                    settings.max_difference, where);
  });
  return report;
}

std::string evo_results_zip(const evo::Result& result, const std::string& ref_name, const std::string& est_name) {
  const nlohmann::json info = {
      {"title", result.title}, {"ref_name", ref_name}, {"est_name", est_name}, {"label", result.label}};
  std::vector<std::pair<std::string, std::string>> members = {
      {"info.json", info.dump()},
      {"stats.json", stats_json(result.stats).dump()},
      {"error_array.npy", npy_of(result.errors)},
      {"seconds_from_start.npy", npy_of(result.seconds_from_start)},
      {"timestamps.npy", npy_of(result.timestamps)},
      {"distances_from_start.npy", npy_of(result.distances_from_start)},
      {"distances.npy", npy_of(result.distances)}};
  if (result.aligned) {
    // evo stores the 4x4 Sim(3) matrix, row-major (C order).
    std::vector<double> m(16);
    Eigen::Map<Eigen::Matrix<double, 4, 4, Eigen::RowMajor>>(m.data()) = result.alignment;
    members.emplace_back("alignment_transformation_sim3.npy", io::npy_bytes(m.data(), "<f8", {4, 4}));
  }
  members.emplace_back(ref_name + ".tum", fusion::format_tum_trajectory(result.reference));
  members.emplace_back(est_name + ".tum", fusion::format_tum_trajectory(result.estimate));
  return io::zip_stored(members);
}

void write_plots(cli::ItemContext& ctx, const std::string& folder, const fusion::Trajectory& trajectory,
                 const fusion::evo::Result* ape) {
  namespace fs = std::filesystem;
  using fusion::positions;                                         // io::Point3d is std::array<double, 3>
  const std::string shown = fs::path(folder).filename().string();  // the sequence's name, short
  auto write = [&](const std::string& file, const io::ImageU8& image) {
    ctx.write_atomically((fs::path(folder) / file).string(),
                         [&](const std::string& tmp) { io::write_image(tmp, image); });
  };
  if (ape == nullptr) {
    write("trajectory.png", io::plot_trajectory(positions(trajectory), {}, {}, shown + ": trajectory", ""));
    return;
  }
  write("trajectory.png", io::plot_trajectory(positions(ape->estimate), ape->errors, positions(ape->reference),
                                              shown + ": " + one_line(ape->title), ape->label));
  write("ape.png", io::plot_over_time(ape->seconds_from_start, ape->errors, ape->stats.rmse, ape->stats.mean,
                                      ape->stats.median, shown + ": " + one_line(ape->title), ape->label));
}

}  // namespace s3d::icp_fuse
