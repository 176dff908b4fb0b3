// The subcommand table, the plan and outputs through it, and what the subcommands' write stages share.
#include "command.hpp"

#include <algorithm>
#include <filesystem>

#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/overlays.hpp"

namespace s3d::pc_sample {

const std::vector<Command>& commands() {
  static const std::vector<Command> table{fps_command(),    ball_command(),  knn_command(),
                                          interp_command(), voxel_command(), rulebook_command()};
  return table;
}

const Command& command_of(Mode mode) {
  const auto& table = commands();
  const auto it = std::find_if(table.begin(), table.end(), [mode](const Command& c) { return c.mode == mode; });
  S3D_EXPECTS(it != table.end(), "pc-sample: no command for this mode");
  return *it;
}

Plan make_plan(Mode mode, const Flags& f) {
  Plan p;
  p.mode = mode;
  p.input_format = io::parse_cloud_format(f.input_format);
  p.drop_invalid = f.drop_invalid;
  command_of(mode).plan(f, p);
  return p;
}

std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan) {
  return command_of(plan.mode).outputs(item, ctx, plan);
}

std::string output_format(const std::string& path, const cli::CommonSettings& settings) {
  return path == "-" && settings.format.empty() ? "" : cli::format_of(path, settings);
}

void cloud_fields(nlohmann::json& rec, const Job& job) {
  rec["format"] = job.in.cloud.meta.format;
  rec["points"] = job.in.cloud.size() + job.in.dropped_invalid;
  rec["dropped_invalid"] = job.in.dropped_invalid;
  rec["origin"] = job.origin;
}

nlohmann::json elements_json(const points::ElementChanges& changes) {
  nlohmann::json j = nlohmann::json::object();
  if (changes.faces_dropped) j["faces_dropped"] = changes.faces_dropped;
  if (!changes.elements_dropped.empty()) j["elements_dropped"] = changes.elements_dropped;
  return j;
}

void write_preview(cli::ItemContext& ctx, const std::string& path, const Job& job, const std::vector<float>& marks,
                   const char* what) {
  const std::string title = std::filesystem::path(job.in.name).filename().string() + ": " +
                            std::to_string(job.local.size() / 3) + " points, " + std::to_string(marks.size() / 3) +
                            " " + what + " (red), seen from +z";
  const io::ImageU8 picture =
      io::plot_top_down({job.local.data(), job.local.size() / 3}, {marks.data(), marks.size() / 3}, title);
  ctx.write_atomically(path, [&](const std::string& tmp) { io::write_image(tmp, picture); });
}

void require_npy_names(const cli::CommonSettings& settings) {
  // Several arrays are named from the first (NAME.npy, NAME.dist.npy, ...): that name must end in .npy.
  for (const auto& o : settings.outputs)
    if (o == "-" || o.size() < 4 || o.compare(o.size() - 4, 4, ".npy") != 0)
      throw InvalidArgument("-o " + o + ": several arrays are written, named from it (NAME.npy, " +
                            "NAME.dist.npy, ...): give -o NAME.npy");
}

}  // namespace s3d::pc_sample
