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

std::string kind_of(const RulebookLayer& layer) {
  if (layer.inverse || !layer.inverse_of.empty()) return "inverse";
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
  const std::size_t m = static_cast<std::size_t>(array.shape[0]);
  if (m == 0) throw DataError(name + ": no voxel coordinates (shape [0, 4])");
  for (std::size_t r = 0; r < m; ++r)
    if (array.values[4 * r] < 0)
      throw DataError(name + ": row " + std::to_string(r) + ": negative batch id " +
                      std::to_string(array.values[4 * r]));
  return std::move(array.values);
}

std::vector<LayerResult> run_layers(points::RulebookEngine& engine, const Plan& plan, const points::SparseCoords& in,
                                    const std::string& name) {
  using Clock = std::chrono::steady_clock;
  std::vector<LayerResult> out;
  std::vector<points::SparseCoords> inputs;  // each layer's input (inverse_of needs its forward's)
  std::map<std::string, std::size_t> by_name;
  points::SparseCoords cur = in;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const RulebookLayer& layer = plan.layers[i];
    const std::string where = plan.chained ? name + ": layer " + layer.name + ": " : name + ": ";
    LayerResult r;
    r.name = layer.name;
    r.kind = kind_of(layer);
    r.spec = layer.spec;
    try {
      const auto t0 = Clock::now();
      if (!layer.inverse_of.empty()) {
        const std::size_t f = by_name.at(layer.inverse_of);
        const points::Rulebook& forward = out[f].rb;
        if (forward.out.coords != cur.coords || forward.out.shape != cur.shape)
          throw DataError("the input is not layer " + layer.inverse_of + "'s output (an inverse layer undoes a " +
                          "layer whose outputs reach it unchanged, through submanifold layers only)");
        r.spec = out[f].spec;
        r.rb = engine.inverse(forward, inputs[f]);
      } else if (layer.inverse) {
        const points::Rulebook forward = engine.build(cur, layer.spec);
        r.rb = engine.inverse(forward, cur);
      } else {
        r.rb = engine.build(cur, layer.spec);
      }
      r.milliseconds = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    } catch (const InvalidArgument& e) {
      throw DataError(where + e.what());
    } catch (const DataError& e) {
      throw DataError(where + e.what());
    }
    inputs.push_back(cur);
    cur = r.rb.out;
    by_name[layer.name] = i;
    out.push_back(std::move(r));
  }
  return out;
}

std::string rulebook_file(const std::vector<LayerResult>& layers, bool chained, bool npy) {
  auto pairs_npy = [](const LayerResult& l) {
    const points::Rulebook& rb = l.rb;
    const std::vector<std::int32_t> pairs = rb.spconv_pairs(rb.inputs);
    return io::npy_bytes(pairs.data(), "<i4", {2, rb.kernel_volume, rb.inputs});
  };
  if (npy) return pairs_npy(layers.front());
  std::vector<std::pair<std::string, std::string>> files;
  for (const LayerResult& l : layers) {
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

nlohmann::json rulebook_record(const std::vector<LayerResult>& layers) {
  nlohmann::json list = nlohmann::json::array();
  for (const LayerResult& l : layers) {
    const points::ConvSpec& s = l.spec;
    nlohmann::json j;
    j["name"] = l.name;
    j["kind"] = l.kind;
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
