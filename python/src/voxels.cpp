// s3d.voxelize and s3d.rulebook and their engines: s3d::points' voxel grid and sparse-convolution rulebooks.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include <algorithm>
#include <optional>
#include <variant>

#include "arrays.hpp"
#include "engines.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/points/rulebook.hpp"
#include "s3d/points/voxels.hpp"
#include "staging.hpp"

namespace s3d::python {
namespace {

using namespace nb::literals;
using Triple = std::variant<int, std::array<int, 3>>;
using Size3 = std::variant<float, std::array<float, 3>>;

std::array<int, 3> triple(const Triple& v) {
  if (const auto* one = std::get_if<int>(&v)) return {*one, *one, *one};
  return std::get<std::array<int, 3>>(v);
}

points::VoxelizeParams voxel_params(const Size3& voxel_size, const std::string& origin,
                                    std::optional<std::array<float, 6>> range, int max_points, std::int64_t max_voxels,
                                    int min_points, const std::string& reduce) {
  points::VoxelizeParams p;
  if (const auto* one = std::get_if<float>(&voxel_size)) {
    p.voxel_size = {*one, *one, *one};
  } else {
    p.voxel_size = std::get<std::array<float, 3>>(voxel_size);
  }
  if (origin == "world") {
    p.origin = points::VoxelOrigin::kWorld;
  } else if (origin == "min_bound") {
    p.origin = points::VoxelOrigin::kMinBound;
  } else if (origin == "range") {
    p.origin = points::VoxelOrigin::kRange;
  } else {
    throw InvalidArgument("origin: expected \"world\" (PCL), \"min_bound\" (Open3D) or \"range\" (spconv)");
  }
  if (range.has_value() != (p.origin == points::VoxelOrigin::kRange)) {
    throw InvalidArgument("range: give [x_min, y_min, z_min, x_max, y_max, z_max] exactly when origin=\"range\"");
  }
  if (range) p.range = *range;
  p.max_points_per_voxel = max_points;
  p.max_voxels = max_voxels;
  p.min_points_per_voxel = min_points;
  if (reduce == "mean") {
    p.aggregate = points::VoxelAggregate::kMean;
  } else if (reduce == "first") {
    p.aggregate = points::VoxelAggregate::kFirst;
  } else if (reduce == "nearest") {
    p.aggregate = points::VoxelAggregate::kNearestCenter;
  } else {
    throw InvalidArgument("reduce: expected \"mean\", \"first\" or \"nearest\"");
  }
  p.validate();
  return p;
}

nb::dict voxel_dict(std::int64_t count, const std::array<std::int64_t, 3>& shape, const std::array<double, 3>& origin,
                    std::int64_t out_of_range, std::int64_t over_points, std::int64_t over_voxels) {
  nb::dict d;
  d["count"] = count;
  d["shape"] = nb::make_tuple(shape[0], shape[1], shape[2]);
  d["origin"] = nb::make_tuple(origin[0], origin[1], origin[2]);
  d["dropped_out_of_range"] = out_of_range;
  d["dropped_over_max_points"] = over_points;
  d["dropped_over_max_voxels"] = over_voxels;
  return d;
}

nb::dict voxelize(points::VoxelEngine& engine, nb::handle points_obj, const Size3& voxel_size,
                  const std::string& origin, std::optional<std::array<float, 6>> range, int max_points,
                  std::int64_t max_voxels, int min_points, const std::string& reduce, nb::handle batch_obj,
                  nb::handle stream_obj) {
  const Input pts = input(points_obj, "points", {DType::kFloat32}, {kAny, 3});
  require_engine_device(engine.device(), pts.device, "points");
  const points::VoxelizeParams params =
      voxel_params(voxel_size, origin, range, max_points, max_voxels, min_points, reduce);
  std::optional<Input> batch;
  if (!batch_obj.is_none()) {
    batch = input(batch_obj, "batch", {DType::kInt32}, {pts.dim(0)});
    require_same_device(pts, {&*batch});
  }
  const StreamHandle stream = resolve_stream(stream_obj, pts);
  const Framework framework = framework_of(points_obj);
  const std::int64_t n = pts.dim(0);
  if (pts.device.is_cuda()) {
    // voxelize_device runs on the engine's own stream: the caller's stream is drained first (its points may still
    // be being written) and after the copies below (the engine's next call reuses the buffers they read).
    points::DeviceVoxels v;
    {
      nb::gil_scoped_release release;
      synchronize(stream);
      v = engine.voxelize_device({pts.as<float>(), static_cast<std::size_t>(n)},
                                 batch ? batch->as<std::int32_t>() : nullptr, params);
    }
    nb::dict d = voxel_dict(v.count, v.shape, v.origin, v.dropped_out_of_range, v.dropped_over_max_points,
                            v.dropped_over_max_voxels);
    const std::int64_t m = v.count;
    d["coords"] = export_array(copy_device_output(v.coords, DType::kInt32, {m, 4}, pts.device, stream), framework);
    d["xyz"] = export_array(copy_device_output(v.xyz, DType::kFloat32, {m, 3}, pts.device, stream), framework);
    d["points_per_voxel"] =
        export_array(copy_device_output(v.points_per_voxel, DType::kInt32, {m}, pts.device, stream), framework);
    d["representative"] =
        export_array(copy_device_output(v.representative, DType::kInt32, {m}, pts.device, stream), framework);
    d["point_voxel"] =
        export_array(copy_device_output(v.point_voxel, DType::kInt32, {n}, pts.device, stream), framework);
    {
      nb::gil_scoped_release release;
      synchronize(stream);
    }
    return d;
  }
  const HostCopy<float> xyz(pts, stream);
  std::optional<HostCopy<std::int32_t>> batch_host;
  if (batch) batch_host.emplace(*batch, stream);
  points::Voxels v;
  {
    nb::gil_scoped_release release;
    v = engine.voxelize({xyz.data(), static_cast<std::size_t>(n)}, batch_host ? batch_host->data() : nullptr, params);
  }
  nb::dict d = voxel_dict(v.count, v.shape, v.origin, v.dropped_out_of_range, v.dropped_over_max_points,
                          v.dropped_over_max_voxels);
  const std::int64_t m = v.count;
  d["coords"] = export_array(to_device(adopt(std::move(v.coords), {m, 4}), pts.device, stream), framework);
  d["xyz"] = export_array(to_device(adopt(std::move(v.xyz), {m, 3}), pts.device, stream), framework);
  d["points_per_voxel"] =
      export_array(to_device(adopt(std::move(v.points_per_voxel), {m}), pts.device, stream), framework);
  d["representative"] = export_array(to_device(adopt(std::move(v.representative), {m}), pts.device, stream), framework);
  d["point_voxel"] = export_array(to_device(adopt(std::move(v.point_voxel), {n}), pts.device, stream), framework);
  return d;
}

/// spconv's indice_pairs [2, K, n_max] (-1 padded) from a rulebook's CSR pairs in device memory.
Output spconv_pairs_on_device(const std::int32_t* in_index, const std::int32_t* out_index,
                              const std::vector<std::int64_t>& offsets, std::int64_t n_max, const Device& device,
                              StreamHandle stream) {
  const std::int64_t k = static_cast<std::int64_t>(offsets.size()) - 1;
  Output pairs = allocate(DType::kInt32, {2, k, n_max}, device, stream);
  ScopedDevice scoped(device.index());
  detail::fill_bytes_async(pairs.data, 0xFF, pairs.array.nbytes(), stream);
  for (std::int64_t o = 0; o < k; ++o) {
    const std::int64_t begin = offsets[static_cast<std::size_t>(o)],
                       count = offsets[static_cast<std::size_t>(o) + 1] - begin;
    if (count == 0) continue;
    detail::copy_bytes_async(pairs.as<std::int32_t>() + o * n_max, in_index + begin, count * sizeof(std::int32_t), 3,
                             stream);
    detail::copy_bytes_async(pairs.as<std::int32_t>() + (k + o) * n_max, out_index + begin,
                             count * sizeof(std::int32_t), 3, stream);
  }
  return pairs;
}

nb::dict rulebook(points::RulebookEngine& engine, nb::handle coords_obj, const std::array<std::int32_t, 3>& shape,
                  const Triple& kernel, const Triple& stride, const Triple& padding, const Triple& dilation, bool subm,
                  bool inverse, int batch_size, nb::handle stream_obj) {
  const Input coords = input(coords_obj, "coords", {DType::kInt32}, {kAny, 4});
  require_engine_device(engine.device(), coords.device, "coords");
  points::ConvSpec spec;
  spec.kernel = triple(kernel);
  spec.stride = triple(stride);
  spec.padding = triple(padding);
  spec.dilation = triple(dilation);
  spec.subm = subm;
  if (subm) {
    for (int a = 0; a < 3; ++a) spec.padding[a] = (spec.kernel[a] / 2) * spec.dilation[a];
  }
  spec.validate();
  if (batch_size < 0) throw InvalidArgument("batch_size: expected >= 0 (0 = the largest batch id + 1)");
  const StreamHandle stream = resolve_stream(stream_obj, coords);
  const Framework framework = framework_of(coords_obj);
  const std::int64_t m = coords.dim(0);
  nb::dict d;
  if (coords.device.is_cuda() && !inverse) {
    if (batch_size == 0) {
      throw InvalidArgument("batch_size: give it for coordinates on a GPU (reading the largest id back would sync)");
    }
    if (m == 0) throw DataError("no voxel coordinates (shape [0, 4])");  // as the host path says
    // build_device runs on the engine's own stream: drained around it as voxelize's.
    points::DeviceRulebook rb;
    {
      nb::gil_scoped_release release;
      synchronize(stream);
      rb = engine.build_device(coords.as<std::int32_t>(), m, shape, batch_size, spec);
    }
    const std::int64_t pairs = rb.offsets.back();
    const std::int64_t k = rb.kernel_volume;
    d["out_coords"] = export_array(
        copy_device_output(rb.out_coords, DType::kInt32, {rb.outputs, 4}, coords.device, stream), framework);
    d["out_shape"] = nb::make_tuple(rb.out_shape[0], rb.out_shape[1], rb.out_shape[2]);
    d["in_index"] =
        export_array(copy_device_output(rb.in_index, DType::kInt32, {pairs}, coords.device, stream), framework);
    d["out_index"] =
        export_array(copy_device_output(rb.out_index, DType::kInt32, {pairs}, coords.device, stream), framework);
    std::vector<std::int64_t> offsets = rb.offsets;
    std::vector<std::int32_t> counts(static_cast<std::size_t>(k));
    for (std::int64_t o = 0; o < k; ++o) counts[o] = static_cast<std::int32_t>(offsets[o + 1] - offsets[o]);
    d["indice_pairs"] = export_array(
        spconv_pairs_on_device(rb.in_index, rb.out_index, offsets, std::max<std::int64_t>(m, 1), coords.device, stream),
        framework);
    d["indice_num"] = export_array(to_device(adopt(std::move(counts), {k}), coords.device, stream), framework);
    d["offsets"] = export_array(to_device(adopt(std::move(offsets), {k + 1}), coords.device, stream), framework);
    {
      nb::gil_scoped_release release;
      synchronize(stream);
    }
    return d;
  }
  const HostCopy<std::int32_t> host(coords, stream);
  points::SparseCoords in =
      points::coords_from_rows(std::vector<std::int32_t>(host.data(), host.data() + 4 * m), shape, batch_size);
  points::Rulebook rb;
  {
    nb::gil_scoped_release release;
    rb = engine.build(in, spec);
    if (inverse) rb = engine.inverse(rb, in);
  }
  const std::int64_t k = rb.kernel_volume;
  const std::int64_t pairs = rb.pairs();
  const std::int64_t outputs = rb.out.count();
  // spconv sizes indice_pairs by the layer's input count.
  std::vector<std::int32_t> spconv = rb.spconv_pairs(std::max<std::int64_t>(rb.inputs, 1));
  const std::int64_t n_max = std::max<std::int64_t>(rb.inputs, 1);
  d["out_coords"] =
      export_array(to_device(adopt(std::move(rb.out.coords), {outputs, 4}), coords.device, stream), framework);
  d["out_shape"] = nb::make_tuple(rb.out.shape[0], rb.out.shape[1], rb.out.shape[2]);
  d["in_index"] = export_array(to_device(adopt(std::move(rb.in_index), {pairs}), coords.device, stream), framework);
  d["out_index"] = export_array(to_device(adopt(std::move(rb.out_index), {pairs}), coords.device, stream), framework);
  d["indice_pairs"] =
      export_array(to_device(adopt(std::move(spconv), {2, k, n_max}), coords.device, stream), framework);
  d["indice_num"] = export_array(to_device(adopt(std::move(rb.counts), {k}), coords.device, stream), framework);
  d["offsets"] = export_array(to_device(adopt(std::move(rb.offsets), {k + 1}), coords.device, stream), framework);
  return d;
}

const char* kVoxelDoc =
    "Voxelises float32 [N, 3] points (docs/PC-SAMPLE.md): origin \"world\" (PCL VoxelGrid), \"min_bound\" "
    "(Open3D) or \"range\" (spconv / OpenPCDet, with range=[x0, y0, z0, x1, y1, z1]); max_points per voxel, "
    "max_voxels, min_points, reduce \"mean\" | \"first\" | \"nearest\"; batch: int32 [N] ids. Returns a dict: "
    "coords int32 [M, 4] (batch, z, y, x) in sorted order, xyz [M, 3], points_per_voxel [M], representative [M], "
    "point_voxel [N] (-1 = dropped), count, shape (z, y, x), origin, dropped_* counts.";
const char* kRulebookDoc =
    "The rulebook of one sparse convolution (spconv's convention, docs/PC-SAMPLE.md) on int32 [M, 4] (batch, z, y, "
    "x) coordinates in a grid of shape (z, y, x). kernel, stride, padding, dilation: int or (z, y, x); subm: "
    "submanifold (padding k // 2 * dilation); inverse: the transposed convolution of this layer's forward "
    "rulebook (outputs are these coordinates). Returns a dict: out_coords [M', 4], out_shape, the CSR pairs "
    "(offsets int64 [K + 1], in_index, out_index int32 [P], offset-major, sorted by output then input) and "
    "spconv's indice_pairs int32 [2, K, max(inputs, 1)] (-1 padded; inputs: M, or with inverse the forward's "
    "output count) with indice_num int32 [K].";

}  // namespace

void bind_voxels(nb::module_& m) {
  nb::class_<points::VoxelEngine>(m, "VoxelEngine", "Voxelisation on one device; keeps its buffers across calls.")
      .def(
          "__init__",
          [](points::VoxelEngine* self, const std::string& device) {
            new (self) points::VoxelEngine(parse_device(device));
          },
          "device"_a = "cpu")
      .def_prop_ro("device", [](const points::VoxelEngine& e) { return e.device().to_string(); })
      .def("voxelize", &voxelize, "points"_a, "voxel_size"_a, nb::kw_only(), "origin"_a = "world",
           "range"_a = nb::none(), "max_points"_a = 0, "max_voxels"_a = 0, "min_points"_a = 1, "reduce"_a = "mean",
           "batch"_a = nb::none(), "stream"_a = nb::none(), kVoxelDoc);
  m.def(
      "voxelize",
      [](nb::handle points, const Size3& voxel_size, const std::string& origin,
         std::optional<std::array<float, 6>> range, int max_points, std::int64_t max_voxels, int min_points,
         const std::string& reduce, nb::handle batch, nb::handle stream) {
        const Input pts = input(points, "points", {DType::kFloat32}, {kAny, 3});
        return voxelize(cached_engine<points::VoxelEngine>(pts.device), points, voxel_size, origin, range, max_points,
                        max_voxels, min_points, reduce, batch, stream);
      },
      "points"_a, "voxel_size"_a, nb::kw_only(), "origin"_a = "world", "range"_a = nb::none(), "max_points"_a = 0,
      "max_voxels"_a = 0, "min_points"_a = 1, "reduce"_a = "mean", "batch"_a = nb::none(), "stream"_a = nb::none(),
      kVoxelDoc);

  nb::class_<points::RulebookEngine>(m, "RulebookEngine", "Rulebooks on one device; keeps its hash table across calls.")
      .def(
          "__init__",
          [](points::RulebookEngine* self, const std::string& device) {
            new (self) points::RulebookEngine(parse_device(device));
          },
          "device"_a = "cpu")
      .def_prop_ro("device", [](const points::RulebookEngine& e) { return e.device().to_string(); })
      .def("rulebook", &rulebook, "coords"_a, "shape"_a, "kernel"_a = 3, "stride"_a = 1, "padding"_a = 0,
           "dilation"_a = 1, nb::kw_only(), "subm"_a = false, "inverse"_a = false, "batch_size"_a = 0,
           "stream"_a = nb::none(), kRulebookDoc);
  m.def(
      "rulebook",
      [](nb::handle coords, const std::array<std::int32_t, 3>& shape, const Triple& kernel, const Triple& stride,
         const Triple& padding, const Triple& dilation, bool subm, bool inverse, int batch_size, nb::handle stream) {
        const Input c = input(coords, "coords", {DType::kInt32}, {kAny, 4});
        return rulebook(cached_engine<points::RulebookEngine>(c.device), coords, shape, kernel, stride, padding,
                        dilation, subm, inverse, batch_size, stream);
      },
      "coords"_a, "shape"_a, "kernel"_a = 3, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, nb::kw_only(),
      "subm"_a = false, "inverse"_a = false, "batch_size"_a = 0, "stream"_a = nb::none(), kRulebookDoc);
}

}  // namespace s3d::python
