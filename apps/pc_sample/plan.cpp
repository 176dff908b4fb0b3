#include "plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "../common/tool_files.hpp"
#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::pc_sample {
namespace {

// The library's checks name its fields (KnnParams.k); a user of the tool knows the flags.
constexpr std::pair<const char*, const char*> kFlagOfField[] = {
    {"KnnParams.k", "-k"},
    {"BallQueryParams.radius", "--radius"},
    {"BallQueryParams.min_radius", "--min-radius"},
    {"BallQueryParams.k", "-k"},
    {"VoxelizeParams.voxel_size", "--voxel-size"},
    {"VoxelizeParams.origin", "--origin"},
    {"VoxelizeParams.range", "--range"},
    {"VoxelizeParams.max_points_per_voxel", "--max-points-per-voxel"},
    {"VoxelizeParams.max_voxels", "--max-voxels"},
    {"VoxelizeParams.min_points_per_voxel", "--min-points"},
    {"VoxelizeParams.aggregate", "--aggregate"},
};

/// params.validate(), its message naming the flags instead of the fields.
template <class Params>
void validate_flags(const Params& params) {
  try {
    params.validate();
  } catch (const InvalidArgument& e) {
    std::string m = e.what();
    for (const auto& [field, flag] : kFlagOfField)
      for (std::size_t at = m.find(field); at != std::string::npos; at = m.find(field, at))
        m.replace(at, std::string(field).size(), flag);
    throw InvalidArgument(m);
  }
}

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

/// --kernel 3 or 3,3,3 (z, y, x): one int for all axes or three.
std::array<int, 3> parse_axes(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    S3D_EXPECTS(used == item.size() && v >= INT32_MIN && v <= INT32_MAX, flag + ": '" + item + "' is not an integer");
    out.push_back(static_cast<int>(v));
  }
  if (out.size() == 1) out.assign(3, out[0]);
  S3D_EXPECTS(out.size() == 3, flag + ": expected N or Z,Y,X, got '" + text + "'");
  return {out[0], out[1], out[2]};
}

/// A JSON layer field: an int for every axis or [z, y, x].
std::array<int, 3> json_axes(const std::string& where, const nlohmann::json& v) {
  std::vector<int> out;
  if (v.is_number_integer()) out.assign(3, v.get<int>());
  if (v.is_array())
    for (const auto& e : v) {
      S3D_EXPECTS(e.is_number_integer(), where + ": expected an integer or [z, y, x] integers");
      out.push_back(e.get<int>());
    }
  S3D_EXPECTS(out.size() == 3, where + ": expected an integer or [z, y, x] integers");
  return {out[0], out[1], out[2]};
}

/// The spec checked; subm's padding made explicit ((k / 2) * d).
void finish_spec(points::ConvSpec& spec) {
  if (spec.subm)
    for (int a = 0; a < 3; ++a) {
      if (spec.padding[a] == 0) spec.padding[a] = (spec.kernel[a] / 2) * spec.dilation[a];
    }
  spec.validate();
}

/// --layers FILE.json: [{"kernel", "stride", "padding", "dilation", "subm", "inverse", "name"}, ...].
std::vector<RulebookLayer> read_layers(const std::string& path) {
  std::ifstream in(path);
  S3D_EXPECTS(in.good(), "--layers " + path + ": cannot open");
  nlohmann::json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    throw InvalidArgument("--layers " + path + ": not JSON: " + e.what());
  }
  S3D_EXPECTS(doc.is_array() && !doc.empty(), "--layers " + path + ": expected a non-empty JSON list of layers");
  std::vector<RulebookLayer> layers;
  std::set<std::string> names;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& l = doc[i];
    const std::string where = "--layers " + path + ": layer " + std::to_string(i);
    S3D_EXPECTS(l.is_object(), where + ": expected an object");
    for (auto it = l.begin(); it != l.end(); ++it) {
      static const std::set<std::string> known{"kernel", "stride", "padding", "dilation", "subm", "inverse", "name"};
      S3D_EXPECTS(known.count(it.key()) == 1, where + ": unknown field '" + it.key() + "'");
    }
    RulebookLayer layer;
    layer.name = "layer" + std::to_string(i);
    if (l.contains("name")) {
      S3D_EXPECTS(l["name"].is_string(), where + ": name must be a string");
      layer.name = l["name"].get<std::string>();
      S3D_EXPECTS(!layer.name.empty() && layer.name.find('/') == std::string::npos,
                  where + ": name must be non-empty, without '/'");
    }
    S3D_EXPECTS(names.insert(layer.name).second, where + ": name '" + layer.name + "' repeats an earlier layer's");
    if (l.contains("inverse") && l["inverse"].is_string()) {
      layer.inverse_of = l["inverse"].get<std::string>();
      S3D_EXPECTS(names.count(layer.inverse_of) == 1 && layer.inverse_of != layer.name,
                  where + ": inverse '" + layer.inverse_of + "' names no earlier layer");
      for (const char* key : {"kernel", "stride", "padding", "dilation", "subm"})
        S3D_EXPECTS(!l.contains(key),
                    where + ": an inverse of layer '" + layer.inverse_of + "' takes its geometry (no " + key + ")");
      layers.push_back(layer);
      continue;
    }
    if (l.contains("inverse")) {
      S3D_EXPECTS(l["inverse"].is_boolean(), where + ": inverse must be true, false or an earlier layer's name");
      layer.inverse = l["inverse"].get<bool>();
    }
    if (l.contains("subm")) {
      S3D_EXPECTS(l["subm"].is_boolean(), where + ": subm must be true or false");
      layer.spec.subm = l["subm"].get<bool>();
    }
    layer.spec.kernel = json_axes(where + ": kernel", l.value("kernel", nlohmann::json(3)));
    layer.spec.stride = json_axes(where + ": stride", l.value("stride", nlohmann::json(1)));
    layer.spec.padding = json_axes(where + ": padding", l.value("padding", nlohmann::json(0)));
    layer.spec.dilation = json_axes(where + ": dilation", l.value("dilation", nlohmann::json(1)));
    try {
      finish_spec(layer.spec);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(where + ": " + e.what());
    }
    layers.push_back(layer);
  }
  return layers;
}

/// The extension an input's cloud output gets when only --output-dir names it.
std::string cloud_extension(const std::string& input, const Plan& plan) {
  if (plan.input_format != io::CloudFormat::kAuto) return std::string(".") + io::to_string(plan.input_format);
  if (input == "-") return ".ply";  // sgm-depth's cloud format, the usual stdin
  std::string ext = fs::path(input).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext.empty() ? ".ply" : ext;
}

/// fps / voxel --emit: `first` or `second` (the samples), `preview`, or one of them with preview. Sets
/// plan.emit_samples and plan.emit_preview; returns the samples' name ("" for preview alone).
std::string parse_sample_emit(const std::string& given, const std::string& first, const std::string& second,
                              Plan& plan) {
  std::string samples;
  plan.emit_preview = false;
  for (const std::string& name : split_list(given)) {
    if (name == "preview") {
      plan.emit_preview = true;
      continue;
    }
    S3D_EXPECTS(name == first || name == second,
                "--emit: expected " + first + ", " + second + " or preview, got '" + name + "'");
    S3D_EXPECTS(samples.empty(), "--emit: " + first + " or " + second + ", not both");
    samples = name;
  }
  S3D_EXPECTS(!samples.empty() || plan.emit_preview, "--emit: name " + first + ", " + second + " or preview");
  plan.emit_samples = !samples.empty();
  return samples;
}

}  // namespace

Plan make_plan(Mode mode, const Flags& f) {
  Plan p;
  p.mode = mode;
  p.input_format = io::parse_cloud_format(f.input_format);
  p.drop_invalid = f.drop_invalid;
  switch (mode) {
    case Mode::kFps: {
      S3D_EXPECTS((f.samples > 0) != !f.ratio.empty(), "fps: give exactly one of -n M (M >= 1) or --ratio r");
      if (!f.ratio.empty()) {
        std::size_t used = 0;
        try {
          p.ratio = std::stod(f.ratio, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        S3D_EXPECTS(used == f.ratio.size() && p.ratio > 0.0 && p.ratio <= 1.0,
                    "--ratio: expected a number in (0, 1], got '" + f.ratio + "'");
      }
      S3D_EXPECTS(f.batch >= 1 && f.batch <= 4096, "--batch must be in [1, 4096]");
      p.batch = f.batch;
      p.samples = f.samples;
      if (f.start == "random") {
        p.random_start = true;
      } else if (!f.start.empty()) {
        std::size_t used = 0;
        try {
          p.start = std::stoll(f.start, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        S3D_EXPECTS(used == f.start.size() && p.start >= 0,
                    "--start: expected an index >= 0 or `random`, got '" + f.start + "'");
      }
      {
        std::size_t used = 0;
        try {
          // stoull accepts a sign and wraps "-5" around; a seed is digits only.
          if (!f.seed.empty() && std::isdigit(static_cast<unsigned char>(f.seed[0])))
            p.seed = std::stoull(f.seed, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        S3D_EXPECTS(used == f.seed.size() && used > 0,
                    "--seed: expected a whole number in [0, 2^64), got '" + f.seed + "'");
      }
      p.allow_fewer = f.allow_fewer;
      p.emit_indices = parse_sample_emit(f.fps_emit, "cloud", "indices", p) == "indices";
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
                  "--radius must be finite and > 0 (got " + std::to_string(f.radius) + ")");
      validate_flags(p.ball);
      p.queries = f.ball_queries;
      p.arrays = parse_arrays(f.ball_emit);
      break;
    case Mode::kKnn:
      p.knn.k = f.knn_k;
      p.knn.exclude_self = f.exclude_self;
      p.knn.allow_fewer = !f.knn_pad.empty();
      if (p.knn.allow_fewer) p.knn.pad = parse_pad("--pad", f.knn_pad);
      validate_flags(p.knn);
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
      validate_flags(p.voxel);
      p.emit_voxels = parse_sample_emit(f.voxel_emit, "cloud", "voxels", p) == "voxels";
      break;
    }
    case Mode::kRulebook: {
      p.rulebook_from_cloud = !f.rb_voxel_size.empty();
      if (p.rulebook_from_cloud) {
        S3D_EXPECTS(f.rb_shape.empty(), "--shape: the voxel grid of --voxel-size gives the shape");
        S3D_EXPECTS(f.rb_batch_size == 0, "--batch-size: a voxelised cloud is one batch (batch id 0)");
        const std::vector<float> size = parse_floats("--voxel-size", f.rb_voxel_size, 3);
        for (float v : size) S3D_EXPECTS(v > 0.f, "--voxel-size must be > 0, got '" + f.rb_voxel_size + "'");
        p.voxel.voxel_size = {size[0], size[1], size[2]};
        p.voxel.origin = points::VoxelOrigin::kWorld;
        validate_flags(p.voxel);
      } else {
        S3D_EXPECTS(!f.rb_shape.empty(),
                    "rulebook: --shape Z,Y,X is required for .npy coordinates "
                    "(or give a cloud and --voxel-size V)");
        const std::array<int, 3> shape = parse_axes("--shape", f.rb_shape);
        S3D_EXPECTS(split_list(f.rb_shape).size() == 3, "--shape: expected Z,Y,X, got '" + f.rb_shape + "'");
        for (int a = 0; a < 3; ++a) {
          S3D_EXPECTS(shape[a] >= 1, "--shape: sizes must be >= 1, got '" + f.rb_shape + "'");
          p.shape[a] = shape[a];
        }
      }
      S3D_EXPECTS(f.rb_batch_size >= 0, "--batch-size must be >= 1 (0 = the largest batch id + 1)");
      p.rulebook_batch_size = f.rb_batch_size;
      if (!f.rb_layers.empty()) {
        p.layers = read_layers(f.rb_layers);
        p.chained = true;
        break;
      }
      RulebookLayer layer;
      layer.spec.kernel = parse_axes("--kernel", f.rb_kernel);
      layer.spec.stride = parse_axes("--stride", f.rb_stride);
      layer.spec.padding = parse_axes("--padding", f.rb_padding.empty() ? "0" : f.rb_padding);
      layer.spec.dilation = parse_axes("--dilation", f.rb_dilation);
      layer.spec.subm = f.rb_subm;
      layer.inverse = f.rb_inverse;
      finish_spec(layer.spec);
      p.layers.push_back(layer);
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

/// --emit preview alone: the picture is the output.
static std::string preview_alone(cli::ItemContext& ctx) {
  const std::string path = ctx.output_path(0, ".preview.png");
  const std::string png = ".png";
  S3D_EXPECTS(
      path.empty() || (path.size() > png.size() && path.compare(path.size() - png.size(), png.size(), png) == 0),
      "--emit preview writes a PNG: give -o NAME.png (or --output-dir), not " + path);
  return path;
}

std::string preview_beside(const std::string& main) {
  S3D_EXPECTS(main != "-",
              "--emit preview beside the samples: give -o FILE (the picture is FILE.preview.png), not -o -");
  std::string stem = main;
  const std::size_t dot = stem.find_last_of('.'), slash = stem.find_last_of('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) stem.erase(dot);
  return stem + ".preview.png";
}

std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan) {
  const std::string& input = item.inputs.front();
  switch (plan.mode) {
    case Mode::kFps: {
      if (!plan.emit_samples) return {preview_alone(ctx)};
      const std::string main = ctx.output_path(0, plan.emit_indices ? ".indices.txt" : cloud_extension(input, plan));
      if (!plan.emit_preview || main.empty()) return {main};
      return {main, preview_beside(main)};
    }
    case Mode::kInterp: {
      if (!plan.emit_weights) return {ctx.output_path(0, cloud_extension(input, plan))};
      const std::string main = ctx.output_path(0, ".three_nn.npy");
      if (main.empty()) return {main};
      S3D_EXPECTS(main != "-", "--emit weights writes two arrays: give -o NAME.npy, not -o -");
      return {main, derived_npy(main, "weights")};
    }
    case Mode::kVoxel: {
      if (!plan.emit_samples) return {preview_alone(ctx)};
      std::vector<std::string> out{ctx.output_path(0, plan.emit_voxels ? ".voxels.npy" : cloud_extension(input, plan))};
      const std::string main = out.front();  // a copy: `out` grows below
      if (main.empty()) return out;
      if (plan.emit_voxels) {
        S3D_EXPECTS(main != "-", "--emit voxels writes three arrays: give -o NAME.npy, not -o -");
        out.push_back(derived_npy(main, "features"));
        out.push_back(derived_npy(main, "point_voxel"));
      }
      if (plan.emit_preview) out.push_back(preview_beside(main));
      return out;
    }
    case Mode::kRulebook:
      return {ctx.output_path(0, ".rulebook.npz")};
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
