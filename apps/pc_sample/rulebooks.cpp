#include "rulebooks.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/zip.hpp"

namespace s3d::pc_sample {
namespace {

std::string kind_of(const points::LayerRulebook& layer) {
  if (layer.inverse) return "inverse";
  return layer.spec.subm ? "subm" : "regular";
}

std::vector<std::int64_t> shape3(const std::array<std::int32_t, 3>& s) { return {s[0], s[1], s[2]}; }

}  // namespace

std::vector<std::int32_t> read_coords_npy(const std::string& path, const std::string& name) {
  io::NpyInt32Array array;
  try {
    array = io::read_npy_int32(path);
  } catch (const IoError& e) {
    // Name the item as the user wrote it and say what a cloud needs instead.
    const std::string what = e.what();
    if (what.find("not an .npy") != std::string::npos)
      throw DataError(name +
                      ": not an .npy file (voxel coordinates are an int32 [M, 4] .npy; a cloud needs "
                      "--voxel-size)");
    throw;
  }
  std::string shape;
  for (const std::uint64_t d : array.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  if (array.shape.size() != 2 || array.shape[1] != 4)
    throw DataError(name + ": voxel coordinates must have shape [M, 4] (batch, z, y, x), got (" + shape + ")");
  return std::move(array.values);  // the values are checked by points::coords_from_rows
}

std::vector<points::LayerRulebook> run_layers(points::RulebookEngine& engine, const Plan& plan,
                                              const points::SparseCoords& in, const std::string& name) {
  try {
    return points::build_chain(engine, in, plan.layers);
  } catch (const DataError& e) {
    throw DataError(name + ": " + e.what());
  }
}

std::string rulebook_file(const std::vector<points::LayerRulebook>& layers, bool chained, bool npy) {
  auto pairs_npy = [](const points::LayerRulebook& l) {
    const points::Rulebook& rb = l.rb;
    const std::vector<std::int32_t> pairs = rb.spconv_pairs(rb.inputs);
    return io::npy_bytes(pairs.data(), "<i4", {2, rb.kernel_volume, rb.inputs});
  };
  if (npy) return pairs_npy(layers.front());
  std::vector<std::pair<std::string, std::string>> files;
  for (const points::LayerRulebook& l : layers) {
    const points::Rulebook& rb = l.rb;
    const std::string prefix = chained ? l.name + "/" : "";
    const std::int64_t p = rb.pairs();
    files.emplace_back(prefix + "pairs.npy", pairs_npy(l));
    files.emplace_back(prefix + "counts.npy", io::npy_bytes(rb.counts.data(), "<i4", {rb.kernel_volume}));
    files.emplace_back(prefix + "offsets.npy", io::npy_bytes(rb.offsets.data(), "<i8", {rb.kernel_volume + 1}));
    files.emplace_back(prefix + "in_index.npy", io::npy_bytes(rb.in_index.data(), "<i4", {p}));
    files.emplace_back(prefix + "out_index.npy", io::npy_bytes(rb.out_index.data(), "<i4", {p}));
    files.emplace_back(prefix + "out_coords.npy", io::npy_bytes(rb.out.coords.data(), "<i4", {rb.out.count(), 4}));
    files.emplace_back(prefix + "out_shape.npy", io::npy_bytes(rb.out.shape.data(), "<i4", {3}));
  }
  return io::zip_stored(files);
}

nlohmann::json rulebook_record(const std::vector<points::LayerRulebook>& layers) {
  nlohmann::json list = nlohmann::json::array();
  for (const points::LayerRulebook& l : layers) {
    const points::ConvSpec& s = l.spec;
    nlohmann::json j;
    j["name"] = l.name;
    j["kind"] = kind_of(l);
    j["kernel"] = s.kernel;
    j["stride"] = s.subm ? std::array<int, 3>{1, 1, 1} : s.stride;
    j["padding"] = s.padding;
    j["dilation"] = s.dilation;
    j["inputs"] = l.rb.inputs;
    j["outputs"] = l.rb.out.count();
    j["out_shape"] = shape3(l.rb.out.shape);
    j["pairs_per_offset"] = l.rb.counts;
    j["pairs"] = l.rb.pairs();
    j["milliseconds"] = l.milliseconds;
    list.push_back(j);
  }
  return list;
}

}  // namespace s3d::pc_sample
