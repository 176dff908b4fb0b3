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

}  // namespace

std::string with_flag_names(std::string m) {
  for (const auto& [field, flag] : kFlagOfField)
    for (std::size_t at = m.find(field); at != std::string::npos; at = m.find(field, at))
      m.replace(at, std::string(field).size(), flag);
  return m;
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

std::array<float, 3> parse_voxel_size(const std::string& flag, const std::string& text) {
  const std::vector<float> size = parse_floats(flag, text, 3);
  for (float v : size) S3D_EXPECTS(v > 0.f, flag + " must be > 0, got '" + text + "'");
  return {size[0], size[1], size[2]};
}

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

namespace {

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

}  // namespace

void finish_spec(points::ConvSpec& spec) {
  if (spec.subm)
    for (int a = 0; a < 3; ++a) {
      if (spec.padding[a] == 0) spec.padding[a] = (spec.kernel[a] / 2) * spec.dilation[a];
    }
  spec.validate();
}

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

std::string cloud_extension(const std::string& input, const Plan& plan) {
  if (plan.input_format != io::CloudFormat::kAuto) return std::string(".") + io::to_string(plan.input_format);
  if (input == "-") return ".ply";  // sgm-depth's cloud format, the usual stdin
  std::string ext = fs::path(input).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext.empty() ? ".ply" : ext;
}

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

std::string derived_npy(const std::string& main, const std::string& suffix) {
  const std::string ext = ".npy";
  if (main.size() < ext.size() || main.compare(main.size() - ext.size(), ext.size(), ext) != 0)
    throw InvalidArgument(main + ": neighbour and weight arrays are .npy files (-o NAME.npy)");
  return main.substr(0, main.size() - ext.size()) + "." + suffix + ext;
}

std::string preview_alone(cli::ItemContext& ctx) {
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

}  // namespace s3d::pc_sample
