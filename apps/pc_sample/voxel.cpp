// pc-sample voxel: voxel-grid downsampling (one point per occupied voxel, every attribute aggregated) or the
// voxels as arrays (coordinates, features, the point -> voxel map), or a picture.
#include "command.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

void add_flags(CLI::App& voxel, Flags& f) {
  voxel.add_option("--voxel-size", f.voxel_size, "voxel edge V, or X,Y,Z per axis (> 0, file units)")
      ->type_name("V|X,Y,Z");
  voxel
      .add_option("--origin", f.voxel_origin,
                  "world: cells at floor(p / v) as PCL VoxelGrid; min-bound: at the cloud's min - v/2 as Open3D "
                  "voxel_down_sample; range: at --range's min, points outside dropped (spconv)")
      ->capture_default_str()
      ->check(CLI::IsMember({"world", "min-bound", "range"}));
  voxel.add_option("--range", f.voxel_range, "with --origin range: the box [x0,x1) x [y0,y1) x [z0,z1)")
      ->type_name("x0,y0,z0,x1,y1,z1");
  voxel.add_option("--max-points-per-voxel", f.max_points_per_voxel, "keep the first N points of a voxel (0 = all)")
      ->capture_default_str();
  voxel.add_option("--max-voxels", f.max_voxels, "keep the first N voxels by their first point (0 = all)")
      ->capture_default_str();
  voxel.add_option("--min-points", f.min_points, "drop voxels with fewer points (PCL's minimum points per voxel)")
      ->capture_default_str();
  voxel.add_option("--aggregate", f.voxel_aggregate, "mean, first (point), or nearest (to the voxel centre)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mean", "first", "nearest"}));
  voxel
      .add_option("--emit", f.voxel_emit,
                  "cloud: one point per voxel, in sorted (z, y, x) order; voxels: -o NAME.npy the [M,4] int32 "
                  "(batch, z, y, x), NAME.features.npy float32 [M, 3 + C], NAME.point_voxel.npy int32 [N]; "
                  "preview: a top-down PNG of the cloud with the voxels' points in red (alone, or beside as "
                  "NAME.preview.png)")
      ->capture_default_str();
}

void plan(const Flags& f, Plan& p) {
  S3D_EXPECTS(!f.voxel_size.empty(), "voxel: --voxel-size V (or X,Y,Z) is required");
  p.voxel.voxel_size = parse_voxel_size("--voxel-size", f.voxel_size);
  if (f.voxel_origin == "world")
    p.voxel.origin = points::VoxelOrigin::kWorld;
  else if (f.voxel_origin == "min-bound")
    p.voxel.origin = points::VoxelOrigin::kMinBound;
  else if (f.voxel_origin == "range")
    p.voxel.origin = points::VoxelOrigin::kRange;
  else
    throw InvalidArgument("--origin: expected world, min-bound or range, got '" + f.voxel_origin + "'");
  S3D_EXPECTS((p.voxel.origin == points::VoxelOrigin::kRange) == !f.voxel_range.empty(),
              "--range x0,y0,z0,x1,y1,z1 goes with --origin range (and --origin range needs it)");
  if (!f.voxel_range.empty()) {
    const std::vector<float> r = parse_floats("--range", f.voxel_range, 6);
    std::copy(r.begin(), r.end(), p.voxel.range.begin());
  }
  p.voxel.max_points_per_voxel = f.max_points_per_voxel;
  p.voxel.max_voxels = f.max_voxels;
  p.voxel.min_points_per_voxel = f.min_points;
  if (f.voxel_aggregate == "mean")
    p.voxel.aggregate = points::VoxelAggregate::kMean;
  else if (f.voxel_aggregate == "first")
    p.voxel.aggregate = points::VoxelAggregate::kFirst;
  else if (f.voxel_aggregate == "nearest")
    p.voxel.aggregate = points::VoxelAggregate::kNearestCenter;
  else
    throw InvalidArgument("--aggregate: expected mean, first or nearest, got '" + f.voxel_aggregate + "'");
  validate_flags(p.voxel);
  p.emit_voxels = parse_sample_emit(f.voxel_emit, "cloud", "voxels", p) == "voxels";
}

std::vector<std::string> outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& p) {
  if (!p.emit_samples) return {preview_alone(ctx)};
  std::vector<std::string> out{
      ctx.output_path(0, p.emit_voxels ? ".voxels.npy" : cloud_extension(item.inputs.front(), p))};
  const std::string main = out.front();  // a copy: `out` grows below
  if (main.empty()) return out;
  if (p.emit_voxels) {
    S3D_EXPECTS(main != "-", "--emit voxels writes three arrays: give -o NAME.npy, not -o -");
    out.push_back(derived_npy(main, "features"));
    out.push_back(derived_npy(main, "point_voxel"));
  }
  if (p.emit_preview) out.push_back(preview_beside(main));
  return out;
}

void check_outputs(const Plan& p, const cli::CommonSettings& s) {
  if (p.emit_voxels) require_npy_names(s);
}

void make_engine(Run& run, const Device& device) { run.voxels = std::make_unique<points::VoxelEngine>(device); }

void compute(const cli::Item&, Run& run, Job& job, Result& r) {
  r.voxels = run.voxels->voxelize({job.local.data(), job.local.size() / 3}, nullptr, run.plan.voxel);
}

void write(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r, nlohmann::json& rec) {
  const Plan& p = run.plan;
  const InputCloud& in = r.job.in;
  const points::Voxels& v = r.voxels;
  cloud_fields(rec, r.job);
  if (p.emit_preview) write_preview(ctx, r.job.outputs.back(), r.job, v.xyz, "voxels");
  rec["voxels"] = v.count;
  rec["points_kept"] = points::points_kept(v);
  rec["dropped_out_of_range"] = v.dropped_out_of_range;
  rec["dropped_over_max_points"] = v.dropped_over_max_points;
  rec["dropped_over_max_voxels"] = v.dropped_over_max_voxels;
  rec["shape"] = v.shape;
  rec["grid_origin"] = v.origin;
  rec["device"] = run.voxels->device().to_string();
  if (!p.emit_samples) return;
  const std::string& main = r.job.outputs.front();
  if (!p.emit_voxels) {
    points::ElementChanges stats;
    const PointCloud out = points::voxel_downsample(in.cloud, v, p.voxel.aggregate, stats);
    const std::string fmt = output_format(main, settings);
    write_cloud(ctx, main, fmt.empty() ? in.cloud.meta.format : fmt, out);
    rec.update(elements_json(stats));
    return;
  }
  const points::VoxelFeatures features = points::voxel_features(in.cloud, v, p.voxel.aggregate);
  // The map names rows of the input file (--drop-invalid rows map to -1).
  const std::vector<std::int32_t> point_voxel =
      points::spread_to_file_rows(v.point_voxel, in.rows, in.cloud.size() + in.dropped_invalid, -1);
  rec["features"] = features.names;
  const std::vector<std::int64_t> coords_shape{v.count, 4},
      feature_shape{v.count, static_cast<std::int64_t>(features.names.size())};
  const std::string coords = io::npy_bytes(v.coords.data(), "<i4", coords_shape);
  const std::string feats = io::npy_bytes(features.values.data(), "<f4", feature_shape);
  const std::string map = io::npy_bytes(point_voxel.data(), "<i4", {static_cast<std::int64_t>(point_voxel.size())});
  write_bytes(ctx, r.job.outputs[0], coords);
  write_bytes(ctx, r.job.outputs[1], feats);
  write_bytes(ctx, r.job.outputs[2], map);
}

}  // namespace

Command voxel_command() {
  return {"voxel",
          "voxel-grid downsampling / voxelisation: one point per occupied voxel, every attribute aggregated",
          Mode::kVoxel,
          &add_flags,
          &plan,
          &outputs,
          &check_outputs,
          &make_engine,
          &compute,
          &write};
}

}  // namespace s3d::pc_sample
