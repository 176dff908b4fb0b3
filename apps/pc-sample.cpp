// pc-sample: farthest point sampling, ball query, kNN, three-NN interpolation, voxel grids and sparse-convolution
// rulebooks of point-cloud files
// (docs/PC-SAMPLE.md). Options per subcommand, then three stages: the frame's workers read each cloud
// and put it in local coordinates (pc_sample/job), the handler runs the run's one engine (s3d::points, on
// the chosen device) in input order, and the workers write the sampled cloud, indices or arrays
// (pc_sample/results).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pc_sample/command.hpp"
#include "pc_sample/job.hpp"
#include "pc_sample/plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"

using s3d::pc_sample::Job;
using s3d::pc_sample::Result;

namespace {

/// A folder argument stands for the clouds in it (.ply .pcd .bin .npy, sorted by name).
std::optional<std::vector<nlohmann::json>> folder_items(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(arg, ec)) return std::nullopt;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(arg, ec)) {
    std::string ext = e.path().extension().string();
    for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (e.is_regular_file() && (ext == ".ply" || ext == ".pcd" || ext == ".bin" || ext == ".npy"))
      files.push_back(e.path().string());
  }
  if (files.empty()) throw s3d::DataError(arg + ": no .ply, .pcd, .bin or .npy files");
  std::sort(files.begin(), files.end());
  std::vector<nlohmann::json> items;
  for (const auto& f : files) items.push_back({{"input", f}});
  return items;
}

}  // namespace

int main(int argc, char** argv) {
  s3d::cli::Tool tool("pc-sample",
                      "Exact farthest point sampling, ball query, kNN, three-NN interpolation, voxel-grid "
                      "downsampling and sparse-convolution rulebooks of point clouds "
                      "(PLY, PCD, KITTI .bin, .npy), on GPU or CPU",
                      s3d::cli::ItemSpec{1, {"input"}});
  s3d::pc_sample::Flags f;
  CLI::App& app = tool.app();
  app.require_subcommand(1);
  const char* io_group = "Input and output";
  app.add_option("--input-format", f.input_format,
                 "the input's format: ply, pcd, bin (KITTI), npy (default: the extension; stdin: its first bytes)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "ply", "pcd", "bin", "kitti", "npy"}))
      ->group(io_group);
  app.add_flag("--drop-invalid", f.drop_invalid,
               "skip points with a NaN/inf coordinate (counted in the record) instead of failing the file; "
               "indices written still name rows of the input file")
      ->group(io_group);

  // One subcommand per file (pc_sample/command.hpp): its flags, plan, outputs, engine, compute and write.
  std::vector<std::pair<CLI::App*, const s3d::pc_sample::Command*>> subcommands;
  for (const auto& command : s3d::pc_sample::commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    command.add_flags(*sub, f);
    subcommands.emplace_back(sub, &command);
  }

  tool.add_example("pc-sample fps -n 4096 scan.ply -o scan_4096.ply",
                   "4096 farthest points, every attribute kept, in selection order");
  tool.add_example("pc-sample knn -k 16 --exclude-self 000000.bin -o nbr.npy",
                   "16 nearest neighbours of every point: nbr.npy, nbr.dist.npy, nbr.counts.npy");
  tool.add_example("sgm-depth l.png r.png --calib K.txt --emit cloud -o - | pc-sample fps - -n 4096 -o s.ply",
                   "sample a stereo cloud in a pipe (PLY on stdin is recognised)");
  tool.add_example("pc-sample voxel --voxel-size 0.1 000000.bin -o down.ply",
                   "voxel-grid downsampling as PCL's VoxelGrid (centroids; every attribute averaged)");
  // The tool's help keeps 2-4 examples (docs/CLI.md); interp and rulebook show theirs in their own help.

  s3d::pc_sample::Run run;
  s3d::pc_sample::CloudPool clouds;  // the input clouds' storage, from each item's write to a later load
  tool.expand_arguments(folder_items);
  tool.on_start([&](const s3d::Device& device) {
    const auto parsed =
        std::find_if(subcommands.begin(), subcommands.end(), [](const auto& s) { return s.first->parsed(); });
    const s3d::pc_sample::Command& command = *parsed->second;  // CLI11 requires exactly one
    run.plan = s3d::pc_sample::make_plan(command.mode, f);
    // --batch 0: many clouds in flight on a GPU (each a thread-block cluster or a block), one at a time on the
    // CPU, whose engine parallelises within the cloud.
    if (run.plan.batch == 0) run.plan.batch = device.is_cuda() ? s3d::pc_sample::kGpuFpsBatch : 1;
    tool.handle_groups_of(static_cast<std::size_t>(run.plan.batch));
    const auto& s = tool.settings();
    if (s.outputs.empty() && s.output_dir.empty())
      throw s3d::InvalidArgument("no output: give -o PATH|TEMPLATE, -o - (stdout) or --output-dir DIR");
    // Outputs no item could write are usage errors, before any item runs (a template's extension is known too).
    command.check_outputs(run.plan, s);
    s3d::pc_sample::prepare_run(run, device);
  });
  tool.aggregate(
      s3d::cli::sum_of({"points", "dropped_invalid", "samples", "queries", "empty_balls", "voxels", "points_kept",
                        "dropped_out_of_range", "dropped_over_max_points", "dropped_over_max_voxels"},
                       "totals"));
  tool.outputs_of([&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    return s3d::pc_sample::planned_outputs(item, ctx, run.plan);
  });

  s3d::cli::Stages<Job, Result> stages;
  stages.load = [&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    s3d::cli::StageTimer timer(ctx, "read");
    return s3d::pc_sample::load_job(item, ctx, run, clouds);
  };
  stages.handle_group = [&](const s3d::cli::Item& item, Job& job, s3d::cli::ItemContext& ctx,
                            s3d::cli::NextItem<Job> next) {
    s3d::cli::StageTimer timer(ctx, "compute");
    return s3d::pc_sample::compute_group(item, run, std::move(job), next);
  };
  stages.write = [&](const s3d::cli::Item&, Result& result, s3d::cli::ItemContext& ctx) {
    // The input cloud goes back to the pool whether or not its outputs could be written; a read into it
    // replaces everything it held. (An item that fails before its write drops its cloud.)
    struct GiveBack {
      s3d::pc_sample::CloudPool& pool;
      s3d::PointCloud& cloud;
      ~GiveBack() { pool.give_back(std::move(cloud)); }
    } give_back{clouds, result.job.in.cloud};
    return s3d::pc_sample::write_result(ctx, tool.settings(), run, result);
  };
  return tool.run(argc, argv, std::move(stages));
}
