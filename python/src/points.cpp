// s3d.fps, knn, ball_query, three_nn, three_interpolate and their engines: s3d::points' calls on arrays.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <variant>

#include "arrays.hpp"
#include "engines.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/neighbors.hpp"
#include "staging.hpp"

namespace s3d::python {
namespace {

using namespace nb::literals;
using Counts = std::variant<std::int64_t, std::vector<std::int64_t>>;

std::vector<std::int64_t> per_cloud(const Counts& value, std::size_t clouds, const char* name) {
  if (const auto* one = std::get_if<std::int64_t>(&value)) return std::vector<std::int64_t>(clouds, *one);
  const auto& list = std::get<std::vector<std::int64_t>>(value);
  if (list.size() != clouds) {
    throw InvalidArgument((std::string(name) + ": expected one value per cloud (" + std::to_string(clouds) + "), got " +
                           std::to_string(list.size()))
                              .c_str());
  }
  return list;
}

/// fps: `points` [N, 3] (one cloud, or several back to back with `lengths`) or [B, N, 3] (B clouds of N).
nb::object fps(points::FpsEngine& engine, nb::handle points_obj, std::optional<Counts> n, std::optional<double> ratio,
               const Counts& start, std::optional<std::vector<std::int64_t>> lengths, nb::handle out_obj,
               nb::handle stream_obj) {
  const Input pts = input_any_shape(points_obj, "points", {DType::kFloat32}, 2, 3);
  if (pts.shape.back() != 3) throw InvalidArgument("points: expected shape [N, 3] or [B, N, 3] (x y z per point)");
  require_engine_device(engine.device(), pts.device, "points");
  if (n.has_value() == ratio.has_value()) throw InvalidArgument("fps: give exactly one of n and ratio");
  const bool stacked = pts.shape.size() == 3;
  if (stacked && lengths)
    throw InvalidArgument("lengths: only for [N, 3] points (a [B, N, 3] batch has B clouds of N)");
  points::FpsBatch batch;
  batch.xyz = pts.as<float>();
  if (stacked) {
    batch.lengths.assign(static_cast<std::size_t>(pts.dim(0)), pts.dim(1));
  } else if (lengths) {
    batch.lengths = *lengths;
    std::int64_t total = 0;
    for (std::int64_t l : batch.lengths) total += l;
    if (total != pts.dim(0)) {
      throw InvalidArgument(("lengths: expected them to sum to the " + std::to_string(pts.dim(0)) + " points, got " +
                             std::to_string(total))
                                .c_str());
    }
  } else {
    batch.lengths = {pts.dim(0)};
  }
  const std::size_t clouds = batch.lengths.size();
  if (ratio) {
    for (std::int64_t l : batch.lengths) batch.samples.push_back(points::samples_for_ratio(*ratio, l));
  } else {
    batch.samples = per_cloud(*n, clouds, "n");
  }
  batch.starts = per_cloud(start, clouds, "start");
  batch.validate();
  if (stacked) {
    for (std::int64_t m : batch.samples) {
      if (m != batch.samples[0]) throw InvalidArgument("n: a [B, N, 3] batch takes one sample count for all clouds");
    }
  }
  const std::int64_t total = batch.total_samples();
  const std::vector<std::int64_t> shape =
      stacked ? std::vector<std::int64_t>{pts.dim(0), clouds ? batch.samples[0] : 0} : std::vector<std::int64_t>{total};
  const Framework framework = framework_of(points_obj);
  if (pts.device.is_cuda()) {
    const StreamHandle stream = resolve_stream(stream_obj, pts);
    Output out = destination(out_obj, "out", DType::kInt32, shape, pts.device, stream);
    {
      nb::gil_scoped_release release;
      before_call(&engine, pts.device, stream);
      engine.run_device_async(batch, out.as<std::int32_t>(), stream);
      after_call(&engine, pts.device, stream);
    }
    return result(out, framework);
  }
  Output given;
  if (!out_obj.is_none()) given = output_into(out_obj, "out", DType::kInt32, shape, pts.device);
  std::vector<std::int32_t> indices;
  {
    nb::gil_scoped_release release;
    indices = engine.run(batch);
  }
  if (!given.given.is_valid()) return export_array(adopt(std::move(indices), shape), framework);
  std::copy(indices.begin(), indices.end(), given.as<std::int32_t>());
  return result(given, framework);
}

points::NeighborPad pad_of(const std::variant<int, std::string>& pad) {
  if (const auto* v = std::get_if<int>(&pad)) {
    if (*v == -1) return points::NeighborPad::kMinusOne;
  } else if (std::get<std::string>(pad) == "first") {
    return points::NeighborPad::kFirst;
  }
  throw InvalidArgument("pad: expected -1 or \"first\"");
}

/// Points and (optional) queries as views on one device.
struct PointsAndQueries {
  Input points;
  std::optional<Input> queries;
  PointsView<const float> points_view() const { return {points.as<float>(), static_cast<std::size_t>(points.dim(0))}; }
  PointsView<const float> queries_view() const {
    return queries ? PointsView<const float>{queries->as<float>(), static_cast<std::size_t>(queries->dim(0))}
                   : PointsView<const float>{};
  }
  std::int64_t query_count() const { return queries ? queries->dim(0) : points.dim(0); }
};

PointsAndQueries points_and_queries(nb::handle points_obj, nb::handle queries_obj, const Device& engine_device) {
  PointsAndQueries pq{input(points_obj, "points", {DType::kFloat32}, {kAny, 3}), std::nullopt};
  if (!queries_obj.is_none()) {
    pq.queries = input(queries_obj, "queries", {DType::kFloat32}, {kAny, 3});
    require_same_device(pq.points, {&*pq.queries});
  }
  require_engine_device(engine_device, pq.points.device, "points");
  return pq;
}

/// kNN and ball query share their output shape and paths.
/// The `out=` of kNN and ball query: None, the indices array, or (indices, distances).
std::pair<nb::handle, nb::handle> split_out(nb::handle out, bool with_distances) {
  if (out.is_none()) return {nb::none(), nb::none()};
  if (nb::isinstance<nb::tuple>(out)) {
    nb::tuple pair = nb::borrow<nb::tuple>(out);
    if (pair.size() == 2 && with_distances) return {pair[0], pair[1]};
  } else if (!with_distances) {
    return {out, nb::none()};
  }
  throw InvalidArgument(with_distances ? "out: expected a tuple (indices, distances)"
                                       : "out: expected the indices array");
}

template <typename Params, typename HostCall, typename DeviceCall>
nb::tuple neighbors(const void* engine, const PointsAndQueries& pq, const Params& params, nb::handle out_obj,
                    nb::handle stream_obj, HostCall host_call, DeviceCall device_call, bool with_distances = true) {
  const std::int64_t q = pq.query_count();
  const Framework framework = framework_of(pq.points.object);
  const StreamHandle stream = resolve_stream(stream_obj, pq.points);
  const auto [out_indices, out_distances] = split_out(out_obj, with_distances);
  const std::vector<std::int64_t> shape{q, params.k};
  // New host outputs come from the library's result vectors below; device outputs and a caller's out= now.
  const bool allocate_now = pq.points.device.is_cuda() || q == 0;
  Output indices, distances;
  if (allocate_now || !out_indices.is_none()) {
    indices = destination(out_indices, "out", DType::kInt32, shape, pq.points.device, stream);
  }
  if (with_distances && (allocate_now || !out_distances.is_none())) {
    distances = destination(out_distances, "out", DType::kFloat32, shape, pq.points.device, stream);
  }
  auto results = [&] {
    return nb::make_tuple(result(indices, framework), with_distances ? result(distances, framework) : nb::none());
  };
  if (q == 0) return results();  // the engines read an empty query view as "the points themselves"
  if (pq.points.device.is_cuda()) {
    {
      nb::gil_scoped_release release;
      before_call(engine, pq.points.device, stream);
      device_call(indices.as<std::int32_t>(), with_distances ? distances.as<float>() : nullptr, stream);
      after_call(engine, pq.points.device, stream);
    }
    return results();  // Python objects: with the GIL again
  }
  points::Neighbors found;
  {
    nb::gil_scoped_release release;
    found = host_call();
  }
  if (!indices.given.is_valid()) {  // the library's own vectors become the arrays: no copy
    indices = adopt(std::move(found.indices), shape);
  } else {
    std::copy(found.indices.begin(), found.indices.end(), indices.as<std::int32_t>());
  }
  if (with_distances && !distances.given.is_valid()) {
    distances = adopt(std::move(found.distances), shape);
  } else if (with_distances) {
    std::copy(found.distances.begin(), found.distances.end(), distances.as<float>());
  }
  return results();
}

nb::tuple knn(points::NeighborEngine& engine, nb::handle points_obj, nb::handle queries_obj, int k, bool exclude_self,
              bool allow_fewer, const std::variant<int, std::string>& pad, nb::handle out_obj, nb::handle stream_obj) {
  const PointsAndQueries pq = points_and_queries(points_obj, queries_obj, engine.device());
  points::KnnParams params;
  params.k = k;
  params.exclude_self = exclude_self;
  params.allow_fewer = allow_fewer;
  params.pad = pad_of(pad);
  params.validate();
  return neighbors(
      &engine, pq, params, out_obj, stream_obj, [&] { return engine.knn(pq.points_view(), pq.queries_view(), params); },
      [&](std::int32_t* idx, float* dist, StreamHandle s) {
        engine.knn_device_async(pq.points_view(), pq.queries_view(), params, idx, dist, nullptr, s);
      });
}

nb::object ball_query(points::NeighborEngine& engine, nb::handle points_obj, nb::handle queries_obj, float radius,
                      int k, float min_radius, const std::string& order, const std::variant<int, std::string>& pad,
                      bool return_distances, nb::handle out_obj, nb::handle stream_obj) {
  const PointsAndQueries pq = points_and_queries(points_obj, queries_obj, engine.device());
  points::BallQueryParams params;
  params.radius = radius;
  params.min_radius = min_radius;
  params.k = k;
  if (order == "index") {
    params.order = points::BallOrder::kIndex;
  } else if (order == "distance") {
    params.order = points::BallOrder::kDistance;
  } else {
    throw InvalidArgument("order: expected \"index\" or \"distance\"");
  }
  params.pad = pad_of(pad);
  params.validate();
  nb::tuple both = neighbors(
      &engine, pq, params, out_obj, stream_obj,
      [&] { return engine.ball_query(pq.points_view(), pq.queries_view(), params); },
      [&](std::int32_t* idx, float* dist, StreamHandle s) {
        engine.ball_query_device_async(pq.points_view(), pq.queries_view(), params, idx, dist, nullptr, s);
      },
      return_distances);
  return return_distances ? nb::object(both) : nb::object(both[0]);
}

nb::tuple three_nn(points::NeighborEngine& engine, nb::handle sparse_obj, nb::handle dense_obj, nb::handle stream_obj) {
  const Input sparse = input(sparse_obj, "sparse", {DType::kFloat32}, {kAny, 3});
  const Input dense = input(dense_obj, "dense", {DType::kFloat32}, {kAny, 3});
  require_same_device(sparse, {&dense});
  require_engine_device(engine.device(), sparse.device, "sparse");
  const StreamHandle stream = resolve_stream(stream_obj, sparse);
  // The engine's three-NN takes host memory: device arrays are staged through the host (docs/PYTHON.md).
  const HostCopy<float> sparse_host(sparse, stream), dense_host(dense, stream);
  points::Interpolation result;
  {
    nb::gil_scoped_release release;
    result = engine.three_nn({sparse_host.data(), static_cast<std::size_t>(sparse.dim(0))},
                             {dense_host.data(), static_cast<std::size_t>(dense.dim(0))});
  }
  const Framework framework = framework_of(sparse_obj);
  const std::int64_t q = dense.dim(0);
  return nb::make_tuple(
      export_array(to_device(adopt(std::move(result.indices), {q, 3}), sparse.device, stream), framework),
      export_array(to_device(adopt(std::move(result.weights), {q, 3}), sparse.device, stream), framework));
}

nb::object three_interpolate(nb::handle values_obj, nb::handle indices_obj, nb::handle weights_obj,
                             nb::handle stream_obj) {
  const Input values = input(values_obj, "values", {DType::kFloat32, DType::kFloat64}, {kAny, kAny});
  const Input indices = input(indices_obj, "indices", {DType::kInt32}, {kAny, 3});
  const Input weights = input(weights_obj, "weights", {DType::kFloat32}, {indices.dim(0), 3});
  require_same_device(values, {&indices, &weights});
  const StreamHandle stream = resolve_stream(stream_obj, values);
  const HostCopy<std::int32_t> idx(indices, stream);
  const HostCopy<float> w(weights, stream);
  const std::int64_t q = indices.dim(0), sparse = values.dim(0);
  points::Interpolation interp;
  interp.queries = q;
  interp.indices.assign(idx.data(), idx.data() + 3 * q);
  interp.weights.assign(w.data(), w.data() + 3 * q);
  for (std::int32_t i : interp.indices) {
    if (i < -1 || i >= sparse) {
      throw InvalidArgument(
          ("indices: expected values in [-1, " + std::to_string(sparse) + "), got " + std::to_string(i)).c_str());
    }
  }
  const int channels = static_cast<int>(values.dim(1));
  std::vector<double> as_double;
  const double* values_double = nullptr;
  std::optional<HostCopy<double>> values_host_double;
  if (dtype_of(values) == DType::kFloat64) {
    values_host_double.emplace(values, stream);
    values_double = values_host_double->data();
  } else {
    const HostCopy<float> values_host(values, stream);
    as_double.assign(values_host.data(), values_host.data() + values.size());
    values_double = as_double.data();
  }
  std::vector<double> result;
  {
    nb::gil_scoped_release release;
    result = points::interpolate(interp, values_double, channels);
  }
  Output out;
  if (dtype_of(values) == DType::kFloat64) {
    out = adopt(std::move(result), {q, channels});
  } else {
    out = adopt(std::vector<float>(result.begin(), result.end()), {q, channels});
  }
  return export_array(to_device(out, values.device, stream), framework_of(values_obj));
}

const char* kFpsDoc =
    "Farthest point sampling, exact (docs/PC-SAMPLE.md). points: float32 [N, 3], or [B, N, 3]. Exactly one of n "
    "(int, or one per cloud) and ratio. start: first index (int, or one per cloud). lengths: clouds stored back to "
    "back in [N, 3]. Returns int32 indices local to each cloud, in selection order: [M] (ragged: all clouds' "
    "back to back) or [B, M].";
const char* kKnnDoc =
    "Exact k nearest neighbours (docs/PC-SAMPLE.md). points, queries: float32 [N, 3], [Q, 3] (None = the points). "
    "Returns (indices int32 [Q, K], distances float32 [Q, K]), ascending, ties to the smaller index; missing "
    "neighbours are -1 / inf, or with pad=\"first\" the first repeated.";
const char* kBallDoc =
    "Ball query (pointnet2 semantics by default: the first k points with d < radius in index order). "
    "Returns indices int32 [Q, K] (-1 padded, or pad=\"first\"), with return_distances also distances.";
const char* kThreeNnDoc =
    "The 3 nearest sparse points of each dense point and their inverse-distance weights (pointnet2 three_nn): "
    "(indices int32 [Q, 3], weights float32 [Q, 3]).";
const char* kInterpDoc =
    "out[q, c] = sum_j weights[q, j] * values[indices[q, j], c] (pointnet2 three_interpolate, with values "
    "[N, C] row-major), summed in float64.";

}  // namespace

void bind_points(nb::module_& m) {
  nb::class_<points::FpsEngine>(m, "FpsEngine", "An FPS engine bound to one device; keeps its buffers across calls.")
      .def(
          "__init__",
          [](points::FpsEngine* self, const std::string& device) {
            new (self) points::FpsEngine(parse_device(device));
          },
          "device"_a = "cpu")
      .def_prop_ro("device", [](const points::FpsEngine& e) { return e.device().to_string(); })
      .def("fps", &fps, "points"_a, "n"_a = nb::none(), nb::kw_only(), "ratio"_a = nb::none(), "start"_a = 0,
           "lengths"_a = nb::none(), "out"_a = nb::none(), "stream"_a = nb::none(), kFpsDoc);
  m.def(
      "fps",
      [](nb::handle points, std::optional<Counts> n, std::optional<double> ratio, const Counts& start,
         std::optional<std::vector<std::int64_t>> lengths, nb::handle out, nb::handle stream) {
        const Input pts = input_any_shape(points, "points", {DType::kFloat32}, 2, 3);
        return fps(cached_engine<points::FpsEngine>(pts.device), points, n, ratio, start, lengths, out, stream);
      },
      "points"_a, "n"_a = nb::none(), nb::kw_only(), "ratio"_a = nb::none(), "start"_a = 0, "lengths"_a = nb::none(),
      "out"_a = nb::none(), "stream"_a = nb::none(), kFpsDoc);

  nb::class_<points::NeighborEngine>(
      m, "NeighborEngine", "kNN, ball query and three-NN on one device; keeps its grid and buffers across calls.")
      .def(
          "__init__",
          [](points::NeighborEngine* self, const std::string& device) {
            new (self) points::NeighborEngine(parse_device(device));
          },
          "device"_a = "cpu")
      .def_prop_ro("device", [](const points::NeighborEngine& e) { return e.device().to_string(); })
      .def("knn", &knn, "points"_a, "queries"_a = nb::none(), "k"_a = 16, nb::kw_only(), "exclude_self"_a = false,
           "allow_fewer"_a = false, "pad"_a = -1, "out"_a = nb::none(), "stream"_a = nb::none(), kKnnDoc)
      .def("ball_query", &ball_query, "points"_a, "queries"_a = nb::none(), "radius"_a = 0.1f, "k"_a = 32,
           nb::kw_only(), "min_radius"_a = 0.0f, "order"_a = "index", "pad"_a = -1, "return_distances"_a = false,
           "out"_a = nb::none(), "stream"_a = nb::none(), kBallDoc)
      .def("three_nn", &three_nn, "sparse"_a, "dense"_a, nb::kw_only(), "stream"_a = nb::none(), kThreeNnDoc);
  m.attr("KnnEngine") = m.attr("NeighborEngine");

  auto engine_for = [](nb::handle points, const char* name = "points") -> points::NeighborEngine& {
    return cached_engine<points::NeighborEngine>(input_any_shape(points, name, {DType::kFloat32}, 2, 2).device);
  };
  m.def(
      "knn",
      [engine_for](nb::handle points, nb::handle queries, int k, bool exclude_self, bool allow_fewer,
                   const std::variant<int, std::string>& pad, nb::handle out, nb::handle stream) {
        return knn(engine_for(points), points, queries, k, exclude_self, allow_fewer, pad, out, stream);
      },
      "points"_a, "queries"_a = nb::none(), "k"_a = 16, nb::kw_only(), "exclude_self"_a = false,
      "allow_fewer"_a = false, "pad"_a = -1, "out"_a = nb::none(), "stream"_a = nb::none(), kKnnDoc);
  m.def(
      "ball_query",
      [engine_for](nb::handle points, nb::handle queries, float radius, int k, float min_radius,
                   const std::string& order, const std::variant<int, std::string>& pad, bool return_distances,
                   nb::handle out, nb::handle stream) {
        return ball_query(engine_for(points), points, queries, radius, k, min_radius, order, pad, return_distances, out,
                          stream);
      },
      "points"_a, "queries"_a = nb::none(), "radius"_a = 0.1f, "k"_a = 32, nb::kw_only(), "min_radius"_a = 0.0f,
      "order"_a = "index", "pad"_a = -1, "return_distances"_a = false, "out"_a = nb::none(), "stream"_a = nb::none(),
      kBallDoc);
  m.def(
      "three_nn",
      [engine_for](nb::handle sparse, nb::handle dense, nb::handle stream) {
        return three_nn(engine_for(sparse, "sparse"), sparse, dense, stream);
      },
      "sparse"_a, "dense"_a, nb::kw_only(), "stream"_a = nb::none(), kThreeNnDoc);
  m.def("three_interpolate", &three_interpolate, "values"_a, "indices"_a, "weights"_a, nb::kw_only(),
        "stream"_a = nb::none(), kInterpDoc);
}

}  // namespace s3d::python
