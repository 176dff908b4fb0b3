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

#include "pc_sample/job.hpp"
#include "pc_sample/plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"

using s3d::pc_sample::Job;
using s3d::pc_sample::Mode;
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

/// ball and knn: where the queries come from, and which arrays are written.
void add_neighbour_outputs(CLI::App& sub, std::string& queries, std::string& emit) {
  sub.add_option("--queries", queries, "query points from this cloud file (default: the cloud itself)");
  sub.add_option("--emit", emit,
                 "arrays to write: indices at -o NAME.npy, distances at NAME.dist.npy, counts at NAME.counts.npy")
      ->capture_default_str();
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

  CLI::App* fps = app.add_subcommand("fps", "exact farthest point sampling: the sampled cloud or its indices");
  fps->add_option("-n,--samples", f.samples, "number of points M to sample")->type_name("M");
  fps->add_option("--ratio", f.ratio, "sample ceil(r * N) points instead of -n, 0 < r <= 1")->type_name("R");
  fps->add_option("--start", f.start,
                  "first point: a row of the file (default: the first point kept, row 0 unless --drop-invalid "
                  "dropped it), or `random` (from --seed and the item's index)")
      ->type_name("I|random");
  fps->add_option("--seed", f.seed, "seed of --start random, a whole number in [0, 2^64)")
      ->type_name("UINT")
      ->capture_default_str();
  fps->add_flag("--allow-fewer", f.allow_fewer, "M > N samples all N points instead of failing");
  fps->add_flag("--drop-faces", f.fps_drop_faces, "write no face or other element, only the points");
  fps->add_option("--batch", f.batch,
                  "sample B clouds per launch (one GPU launch for many small clouds; results as one at a time)")
      ->capture_default_str()
      ->type_name("B");
  fps->add_option("--emit", f.fps_emit,
                  "cloud: the sampled points with all their attributes, in selection order (the input's format "
                  "unless -o's extension or --format names another); indices: their input rows, .txt one per "
                  "line or .npy int32; preview: a top-down PNG of the cloud with the samples in red (alone: -o "
                  "NAME.png; cloud,preview: beside the cloud as NAME.preview.png)")
      ->capture_default_str();

  CLI::App* ball = app.add_subcommand("ball", "ball query (pointnet2): up to K points with d < r per query");
  ball->add_option("--radius", f.radius, "r > 0: a point is inside iff its distance is < r")->required();
  ball->add_option("--min-radius", f.min_radius, "also d >= this (mmcv's min_radius; 0 = off)")->capture_default_str();
  ball->add_option("-k,--k", f.ball_k, "neighbours per query (1..1024)")->capture_default_str();
  ball->add_option("--pad", f.ball_pad, "missing slots: -1 (distance inf), or first (the first hit repeated)")
      ->capture_default_str()
      ->check(CLI::IsMember({"-1", "first"}));
  ball->add_option("--order", f.order, "index: the first K in index order (pointnet2); distance: the K nearest")
      ->capture_default_str()
      ->check(CLI::IsMember({"index", "distance"}));
  add_neighbour_outputs(*ball, f.ball_queries, f.ball_emit);

  CLI::App* knn =
      app.add_subcommand("knn", "exact k nearest neighbours, ascending distance, ties to the smaller index");
  knn->add_option("-k,--k", f.knn_k, "neighbours per query (1..1024)")->capture_default_str();
  knn->add_flag("--exclude-self", f.exclude_self, "self queries: point i is never its own neighbour");
  knn->add_option("--pad", f.knn_pad,
                  "allow K > the points available; missing slots: -1 (distance inf) or first (the nearest repeated)")
      ->check(CLI::IsMember({"-1", "first"}));
  add_neighbour_outputs(*knn, f.knn_queries, f.knn_emit);

  CLI::App* interp =
      app.add_subcommand("interp", "three-NN inverse-distance interpolation of a sparse cloud's attributes");
  interp->add_option("--from", f.from, "the sparse cloud (e.g. FPS samples with labels) whose attributes are spread")
      ->required();
  interp
      ->add_option("--attributes", f.attributes,
                   "comma-separated sparse attributes to interpolate (replacing the input's of the same name); "
                   "default: every numeric one the input lacks")
      ->type_name("A,B");
  interp->add_flag("--drop-faces", f.interp_drop_faces, "write no face or other element, only the points");
  interp
      ->add_option("--emit", f.interp_emit,
                   "cloud: the input with the interpolated attributes; weights: -o NAME.npy the [N,3] int32 sparse "
                   "indices and NAME.weights.npy the float32 weights")
      ->capture_default_str()
      ->check(CLI::IsMember({"cloud", "weights"}));

  CLI::App* voxel = app.add_subcommand(
      "voxel", "voxel-grid downsampling / voxelisation: one point per occupied voxel, every attribute aggregated");
  voxel->add_option("--voxel-size", f.voxel_size, "voxel edge V, or X,Y,Z per axis (> 0, file units)")
      ->type_name("V|X,Y,Z");
  voxel
      ->add_option("--origin", f.voxel_origin,
                   "world: cells at floor(p / v) as PCL VoxelGrid; min-bound: at the cloud's min - v/2 as Open3D "
                   "voxel_down_sample; range: at --range's min, points outside dropped (spconv)")
      ->capture_default_str()
      ->check(CLI::IsMember({"world", "min-bound", "range"}));
  voxel->add_option("--range", f.voxel_range, "with --origin range: the box [x0,x1) x [y0,y1) x [z0,z1)")
      ->type_name("x0,y0,z0,x1,y1,z1");
  voxel->add_option("--max-points-per-voxel", f.max_points_per_voxel, "keep the first N points of a voxel (0 = all)")
      ->capture_default_str();
  voxel->add_option("--max-voxels", f.max_voxels, "keep the first N voxels by their first point (0 = all)")
      ->capture_default_str();
  voxel->add_option("--min-points", f.min_points, "drop voxels with fewer points (PCL's minimum points per voxel)")
      ->capture_default_str();
  voxel->add_option("--aggregate", f.voxel_aggregate, "mean, first (point), or nearest (to the voxel centre)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mean", "first", "nearest"}));
  voxel
      ->add_option("--emit", f.voxel_emit,
                   "cloud: one point per voxel, in sorted (z, y, x) order; voxels: -o NAME.npy the [M,4] int32 "
                   "(batch, z, y, x), NAME.features.npy float32 [M, 3 + C], NAME.point_voxel.npy int32 [N]; "
                   "preview: a top-down PNG of the cloud with the voxels' points in red (alone, or beside as "
                   "NAME.preview.png)")
      ->capture_default_str();

  CLI::App* rulebook = app.add_subcommand(
      "rulebook", "sparse-convolution rulebooks (spconv's indice pairs) of voxel coordinates, one layer or a chain");
  rulebook
      ->add_option("--shape", f.rb_shape,
                   "the spatial shape of .npy coordinates (int32 [M,4] batch, z, y, x); required for them")
      ->type_name("Z,Y,X");
  rulebook->add_option("--batch-size", f.rb_batch_size, "batch ids lie in [0, B) (default: the largest id + 1)")
      ->type_name("B");
  rulebook
      ->add_option("--voxel-size", f.rb_voxel_size,
                   "the input is a cloud: voxelise it (world origin, floor(p / v)); the shape is its voxel grid's")
      ->type_name("V|X,Y,Z");
  rulebook->add_option("--kernel", f.rb_kernel, "kernel size K or KZ,KY,KX")
      ->capture_default_str()
      ->type_name("K|KZ,KY,KX");
  rulebook->add_option("--stride", f.rb_stride, "stride S or SZ,SY,SX")->capture_default_str()->type_name("S|SZ,SY,SX");
  rulebook->add_option("--padding", f.rb_padding, "padding P or PZ,PY,PX (default 0; --subm: (K / 2) * D)")
      ->type_name("P|PZ,PY,PX");
  rulebook->add_option("--dilation", f.rb_dilation, "dilation D or DZ,DY,DX")
      ->capture_default_str()
      ->type_name("D|DZ,DY,DX");
  rulebook->add_flag("--subm", f.rb_subm, "submanifold: the outputs are the inputs, in input order (stride 1)");
  rulebook->add_flag("--inverse", f.rb_inverse,
                     "the transposed convolution of the spec's forward rulebook (its outputs are the inputs)");
  CLI::Option* layers =
      rulebook
          ->add_option("--layers", f.rb_layers,
                       "a JSON list of layers [{\"kernel\", \"stride\", \"padding\", \"dilation\", \"subm\", "
                       "\"inverse\", \"name\"}], chained; arrays prefixed NAME/ (default layerN)")
          ->type_name("FILE.json");
  for (const char* name : {"--kernel", "--stride", "--padding", "--dilation", "--subm", "--inverse"})
    layers->excludes(rulebook->get_option(name));

  tool.add_example("pc-sample fps -n 4096 scan.ply -o scan_4096.ply",
                   "4096 farthest points, every attribute kept, in selection order");
  tool.add_example("pc-sample knn -k 16 --exclude-self 000000.bin -o nbr.npy",
                   "16 nearest neighbours of every point: nbr.npy, nbr.dist.npy, nbr.counts.npy");
  tool.add_example("sgm-depth l.png r.png --calib K.txt --emit cloud -o - | pc-sample fps - -n 4096 -o s.ply",
                   "sample a stereo cloud in a pipe (PLY on stdin is recognised)");
  tool.add_example("pc-sample voxel --voxel-size 0.1 000000.bin -o down.ply",
                   "voxel-grid downsampling as PCL's VoxelGrid (centroids; every attribute averaged)");
  // The tool's help keeps 2-4 examples (docs/CLI.md); the other subcommands show theirs in their own help.
  app.get_subcommand("interp")->footer(
      "Example:\n  pc-sample interp dense.ply --from sampled.ply -o labelled.ply\n"
      "      spread the sampled cloud's attributes back to every point (pointnet2 three_interpolate)");
  rulebook->footer(
      "Example:\n  pc-sample rulebook voxels.npy --shape 41,1600,1408 --kernel 3 --stride 2 --padding 1 -o rb.npz\n"
      "      spconv indice pairs [2, K, N] with counts, CSR pairs and the output coordinates");

  s3d::pc_sample::Run run;
  s3d::pc_sample::CloudPool clouds;  // the input clouds' storage, from each item's write to a later load
  tool.expand_arguments(folder_items);
  tool.on_start([&](const s3d::Device& device) {
    const Mode mode = fps->parsed()        ? Mode::kFps
                      : ball->parsed()     ? Mode::kBall
                      : knn->parsed()      ? Mode::kKnn
                      : voxel->parsed()    ? Mode::kVoxel
                      : rulebook->parsed() ? Mode::kRulebook
                                           : Mode::kInterp;
    run.plan = s3d::pc_sample::make_plan(mode, f);
    tool.handle_groups_of(static_cast<std::size_t>(run.plan.batch));
    const auto& s = tool.settings();
    if (s.outputs.empty() && s.output_dir.empty())
      throw s3d::InvalidArgument("no output: give -o PATH|TEMPLATE, -o - (stdout) or --output-dir DIR");
    // Outputs no item could write are usage errors, before any item runs (a template's extension is known too).
    if (mode == Mode::kBall || mode == Mode::kKnn)
      for (const auto& o : s.outputs) {
        if (o == "-" && run.plan.arrays.count() != 1)
          throw s3d::InvalidArgument("-o -: stdout takes one array: --emit indices, distances or counts");
        const std::string fmt = s3d::cli::format_of(o, s);
        if (!fmt.empty() && fmt != "npy")
          throw s3d::InvalidArgument("-o " + o + ": neighbour arrays are .npy files (-o NAME.npy)");
      }
    // Several arrays are named from the first (NAME.npy, NAME.dist.npy, ...): that name must end in .npy.
    const bool several_arrays = ((mode == Mode::kBall || mode == Mode::kKnn) && run.plan.arrays.count() > 1) ||
                                (mode == Mode::kInterp && run.plan.emit_weights) ||
                                (mode == Mode::kVoxel && run.plan.emit_voxels);
    if (several_arrays)
      for (const auto& o : s.outputs)
        if (o == "-" || o.size() < 4 || o.compare(o.size() - 4, 4, ".npy") != 0)
          throw s3d::InvalidArgument("-o " + o + ": several arrays are written, named from it (NAME.npy, " +
                                     "NAME.dist.npy, ...): give -o NAME.npy");
    if (mode == Mode::kRulebook)
      for (const auto& o : s.outputs) {
        const std::string fmt = o == "-" && s.format.empty() ? "npz" : s3d::cli::format_of(o, s);
        if (fmt != "npz" && fmt != "npy")
          throw s3d::InvalidArgument("-o " + o + ": a rulebook is written as .npz (every array) or .npy (pairs)");
      }
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
