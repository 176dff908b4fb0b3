#include "plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "../common/tool_files.hpp"
#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::pc_sample {
namespace {

using apps::split_list;

points::NeighborPad parse_pad(const std::string& flag, const std::string& text) {
  if (text == "-1") return points::NeighborPad::kMinusOne;
  if (text == "first") return points::NeighborPad::kFirst;
  throw InvalidArgument(flag + ": expected first or -1, got '" + text + "'");
}

ArrayEmit parse_arrays(const std::string& text) {
  ArrayEmit e;
  for (const auto& name : split_list(text)) {
    if (name == "indices")
      e.indices = true;
    else if (name == "distances")
      e.distances = true;
    else if (name == "counts")
      e.counts = true;
    else
      throw InvalidArgument("--emit " + name + ": expected a list of indices, distances, counts");
  }
  S3D_EXPECTS(e.count() > 0, "--emit: name at least one of indices, distances, counts");
  return e;
}

/// --voxel-size V or X,Y,Z; --range x0,y0,z0,x1,y1,z1: `count` finite numbers (or one, for `count` 3).
std::vector<float> parse_floats(const std::string& flag, const std::string& text, std::size_t count) {
  std::vector<float> out;
  for (const auto& item : split_list(text)) {
    std::size_t used = 0;
    float v = 0.f;
    try {
      v = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    S3D_EXPECTS(used == item.size() && std::isfinite(v), flag + ": '" + item + "' is not a finite number");
    out.push_back(v);
  }
  if (count == 3 && out.size() == 1) out.assign(3, out[0]);
  S3D_EXPECTS(out.size() == count,
              flag + ": expected " + std::string(count == 3 ? "V or X,Y,Z" : "6 numbers") + ", got '" + text + "'");
  return out;
}

/// The extension an input's cloud output gets when only --output-dir names it.
std::string cloud_extension(const std::string& input, const Plan& plan) {
  if (plan.input_format != io::CloudFormat::kAuto) return std::string(".") + io::to_string(plan.input_format);
  if (input == "-") return ".ply";  // sgm-depth's cloud format, the usual stdin
  std::string ext = fs::path(input).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext.empty() ? ".ply" : ext;
}

}  // namespace

Plan make_plan(Mode mode, const Flags& f) {
  Plan p;
  p.mode = mode;
  p.input_format = io::parse_cloud_format(f.input_format);
  p.drop_invalid = f.drop_invalid;
  switch (mode) {
    case Mode::kFps: {
      S3D_EXPECTS((f.samples > 0) != (f.ratio > 0.0), "fps: give exactly one of -n M (M >= 1) or --ratio r");
      S3D_EXPECTS(f.ratio == 0.0 || (f.ratio > 0.0 && f.ratio <= 1.0), "--ratio must be in (0, 1]");
      S3D_EXPECTS(f.batch >= 1 && f.batch <= 4096, "--batch must be in [1, 4096]");
      p.batch = f.batch;
      p.samples = f.samples;
      p.ratio = f.ratio;
      if (f.start == "random") {
        p.random_start = true;
      } else {
        std::size_t used = 0;
        try {
          p.start = std::stoll(f.start, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        S3D_EXPECTS(used == f.start.size() && p.start >= 0,
                    "--start: expected an index >= 0 or `random`, got '" + f.start + "'");
      }
      p.seed = f.seed;
      p.allow_fewer = f.allow_fewer;
      S3D_EXPECTS(f.fps_emit == "cloud" || f.fps_emit == "indices",
                  "--emit: expected cloud or indices, got '" + f.fps_emit + "'");
      p.emit_indices = f.fps_emit == "indices";
      p.drop_faces = f.fps_drop_faces;
      break;
    }
    case Mode::kBall:
      p.ball.radius = f.radius;
      p.ball.min_radius = f.min_radius;
      p.ball.k = f.ball_k;
      p.ball.pad = parse_pad("--pad", f.ball_pad);
      S3D_EXPECTS(f.order == "index" || f.order == "distance",
                  "--order: expected index or distance, got '" + f.order + "'");
      p.ball.order = f.order == "index" ? points::BallOrder::kIndex : points::BallOrder::kDistance;
      S3D_EXPECTS(std::isfinite(f.radius) && f.radius > 0.0f,
                  "--radius must be > 0 (got " + std::to_string(f.radius) + ")");
      p.ball.validate();
      p.queries = f.ball_queries;
      p.arrays = parse_arrays(f.ball_emit);
      break;
    case Mode::kKnn:
      p.knn.k = f.knn_k;
      p.knn.exclude_self = f.exclude_self;
      p.knn.allow_fewer = !f.knn_pad.empty();
      if (p.knn.allow_fewer) p.knn.pad = parse_pad("--pad", f.knn_pad);
      p.knn.validate();
      p.queries = f.knn_queries;
      S3D_EXPECTS(!(f.exclude_self && !p.queries.empty()), "--exclude-self: only without --queries (self queries)");
      p.arrays = parse_arrays(f.knn_emit);
      break;
    case Mode::kInterp:
      S3D_EXPECTS(!f.from.empty(), "interp: --from SPARSE (the cloud whose attributes are interpolated) is required");
      p.from = f.from;
      p.attributes = split_list(f.attributes);
      S3D_EXPECTS(f.interp_emit == "cloud" || f.interp_emit == "weights",
                  "--emit: expected cloud or weights, got '" + f.interp_emit + "'");
      p.emit_weights = f.interp_emit == "weights";
      p.drop_faces = f.interp_drop_faces;
      break;
    case Mode::kVoxel: {
      S3D_EXPECTS(!f.voxel_size.empty(), "voxel: --voxel-size V (or X,Y,Z) is required");
      const std::vector<float> size = parse_floats("--voxel-size", f.voxel_size, 3);
      for (float v : size) S3D_EXPECTS(v > 0.f, "--voxel-size must be > 0, got '" + f.voxel_size + "'");
      p.voxel.voxel_size = {size[0], size[1], size[2]};
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
      p.voxel.validate();
      S3D_EXPECTS(f.voxel_emit == "cloud" || f.voxel_emit == "voxels",
                  "--emit: expected cloud or voxels, got '" + f.voxel_emit + "'");
      p.emit_voxels = f.voxel_emit == "voxels";
      break;
    }
  }
  return p;
}

std::string derived_npy(const std::string& main, const std::string& suffix) {
  const std::string ext = ".npy";
  if (main.size() < ext.size() || main.compare(main.size() - ext.size(), ext.size(), ext) != 0)
    throw InvalidArgument(main + ": neighbour and weight arrays are .npy files (-o NAME.npy)");
  return main.substr(0, main.size() - ext.size()) + "." + suffix + ext;
}

std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan) {
  const std::string& input = item.inputs.front();
  switch (plan.mode) {
    case Mode::kFps:
      return {ctx.output_path(0, plan.emit_indices ? ".indices.txt" : cloud_extension(input, plan))};
    case Mode::kInterp: {
      if (!plan.emit_weights) return {ctx.output_path(0, cloud_extension(input, plan))};
      const std::string main = ctx.output_path(0, ".three_nn.npy");
      if (main.empty()) return {main};
      S3D_EXPECTS(main != "-", "--emit weights writes two arrays: give -o NAME.npy, not -o -");
      return {main, derived_npy(main, "weights")};
    }
    case Mode::kVoxel: {
      if (!plan.emit_voxels) return {ctx.output_path(0, cloud_extension(input, plan))};
      const std::string main = ctx.output_path(0, ".voxels.npy");
      if (main.empty()) return {main};
      S3D_EXPECTS(main != "-", "--emit voxels writes three arrays: give -o NAME.npy, not -o -");
      return {main, derived_npy(main, "features"), derived_npy(main, "point_voxel")};
    }
    case Mode::kBall:
    case Mode::kKnn: {
      const std::string main = ctx.output_path(0, plan.mode == Mode::kBall ? ".ball.npy" : ".knn.npy");
      if (main.empty()) return {main};
      if (main == "-") {
        S3D_EXPECTS(plan.arrays.count() == 1, "-o -: stdout takes one array: --emit indices, distances or counts");
        return {main};
      }
      std::vector<std::string> out;
      if (plan.arrays.indices) out.push_back(main);
      if (plan.arrays.distances) out.push_back(derived_npy(main, "dist"));
      if (plan.arrays.counts) out.push_back(derived_npy(main, "counts"));
      return out;
    }
  }
  return {};
}

}  // namespace s3d::pc_sample
