// pc-sample interp: a sparse cloud's attributes spread to every point of the input by three-NN inverse-distance
// weights (pointnet2's three_interpolate), or the weights themselves.
#include "command.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

void add_flags(CLI::App& interp, Flags& f) {
  interp.add_option("--from", f.from, "the sparse cloud (e.g. FPS samples with labels) whose attributes are spread")
      ->required();
  interp
      .add_option("--attributes", f.attributes,
                  "comma-separated sparse attributes to interpolate (replacing the input's of the same name); "
                  "default: every numeric one the input lacks")
      ->type_name("A,B");
  interp.add_flag("--drop-faces", f.interp_drop_faces, "write no face or other element, only the points");
  interp
      .add_option("--emit", f.interp_emit,
                  "cloud: the input with the interpolated attributes; weights: -o NAME.npy the [N,3] int32 sparse "
                  "indices and NAME.weights.npy the float32 weights")
      ->capture_default_str()
      ->check(CLI::IsMember({"cloud", "weights"}));
  interp.footer(
      "Example:\n  pc-sample interp dense.ply --from sampled.ply -o labelled.ply\n"
      "      spread the sampled cloud's attributes back to every point (pointnet2 three_interpolate)");
}

void plan(const Flags& f, Plan& p) {
  S3D_EXPECTS(!f.from.empty(), "interp: --from SPARSE (the cloud whose attributes are interpolated) is required");
  p.from = f.from;
  p.attributes = apps::split_list(f.attributes);
  S3D_EXPECTS(f.interp_emit == "cloud" || f.interp_emit == "weights",
              "--emit: expected cloud or weights, got '" + f.interp_emit + "'");
  p.emit_weights = f.interp_emit == "weights";
  p.drop_faces = f.interp_drop_faces;
  p.local_origin = true;
}

std::vector<std::string> outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& p) {
  if (!p.emit_weights) return {ctx.output_path(0, cloud_extension(item.inputs.front(), p))};
  const std::string main = ctx.output_path(0, ".three_nn.npy");
  if (main.empty()) return {main};
  S3D_EXPECTS(main != "-", "--emit weights writes two arrays: give -o NAME.npy, not -o -");
  return {main, derived_npy(main, "weights")};
}

void check_outputs(const Plan& p, const cli::CommonSettings& s) {
  if (p.emit_weights) require_npy_names(s);
}

void make_engine(Run& run, const Device& device) { run.neighbors = std::make_unique<points::NeighborEngine>(device); }

void compute(const cli::Item&, Run& run, Job& job, Result& r) {
  r.weights = run.neighbors->three_nn({job.other_local.data(), job.other_local.size() / 3},
                                      {job.local.data(), job.local.size() / 3});
}

void write(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r, nlohmann::json& rec) {
  const Plan& p = run.plan;
  Job& job = r.job;
  const InputCloud& sparse = *run.other;
  cloud_fields(rec, job);
  rec["sparse_points"] = sparse.cloud.size();
  rec["device"] = run.neighbors->device().to_string();
  if (p.emit_weights) {
    points::to_file_rows(r.weights.indices, sparse.rows);
    const std::vector<std::int64_t> shape{r.weights.queries, 3};
    const std::string idx = io::npy_bytes(r.weights.indices.data(), "<i4", shape);
    const std::string w = io::npy_bytes(r.weights.weights.data(), "<f4", shape);
    write_bytes(ctx, job.outputs[0], idx);
    write_bytes(ctx, job.outputs[1], w);
    return;
  }
  PointCloud& dense = job.in.cloud;
  const std::vector<std::string> names =
      run.interp_columns.empty() ? points::missing_columns(sparse.cloud, dense) : run.interp_columns;
  if (names.empty())
    throw DataError(job.in.name + ": nothing to interpolate: " + sparse.name +
                    " has no per-point attribute this cloud lacks (name them with --attributes)");
  points::interpolate_columns(dense, sparse.cloud, names, r.weights);
  rec["attributes"] = names;
  points::ElementChanges stats;
  if (p.drop_faces) points::drop_elements(dense, stats);
  const std::string fmt = output_format(job.outputs.front(), settings);
  write_cloud(ctx, job.outputs.front(), fmt.empty() ? dense.meta.format : fmt, dense);
  rec.update(elements_json(stats));
}

}  // namespace

Command interp_command() {
  return {"interp",       "three-NN inverse-distance interpolation of a sparse cloud's attributes",
          Mode::kInterp,  &add_flags,
          &plan,          &outputs,
          &check_outputs, &make_engine,
          &compute,       &write};
}

}  // namespace s3d::pc_sample
