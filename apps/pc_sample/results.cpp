// pc-sample's write stage: the item's outputs from the engine's answer, and its record.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "cloud_rows.hpp"
#include "job.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::pc_sample {
namespace {

/// Neighbour indices are rows of the cloud as computed on; the files name rows of the input file.
void to_file_rows(std::vector<std::int32_t>& indices, const InputCloud& cloud) {
  if (cloud.rows.empty()) return;
  for (auto& i : indices)
    if (i >= 0) i = static_cast<std::int32_t>(cloud.file_row(i));
}

std::vector<std::string> default_columns(const PointCloud& sparse, const PointCloud& dense) {
  std::vector<std::string> names;
  for (const auto& c : sparse.attributes)
    if (!c.is_list && c.name != "x" && c.name != "y" && c.name != "z" && !dense.find(c.name)) names.push_back(c.name);
  return names;
}

/// Adds (or overwrites) column `name` of `dense` with the sparse column interpolated by `w`. Integer columns
/// get the nearest integer (a convex combination stays within the type's range).
void interpolate_column(PointCloud& dense, const AttributeColumn& src, const points::Interpolation& w) {
  const std::size_t ns = src.bytes.size() / (scalar_size(src.type) * static_cast<std::size_t>(src.components));
  std::vector<double> values(ns * static_cast<std::size_t>(src.components));
  for (std::size_t i = 0; i < ns; ++i)
    for (int c = 0; c < src.components; ++c) values[i * src.components + c] = src.value(i, c);
  const std::vector<double> out = points::interpolate(w, values.data(), src.components);
  AttributeColumn* dst = dense.find(src.name);
  if (dst && (dst->is_list || dst->components != src.components))
    throw DataError(dense.meta.source + ": column " + src.name + " has another shape than the sparse cloud's");
  if (!dst) dst = &dense.add_attribute(src.name, src.type, src.components);
  const bool integer = !is_floating(dst->type);
  for (std::size_t q = 0; q < dense.size(); ++q)
    for (int c = 0; c < src.components; ++c) {
      const double v = out[q * src.components + c];
      dst->set_value(q, c, integer ? std::nearbyint(v) : v);
    }
}

nlohmann::json elements_json(const RowStats& stats) {
  nlohmann::json j = nlohmann::json::object();
  if (stats.faces_dropped) j["faces_dropped"] = stats.faces_dropped;
  if (!stats.elements_dropped.empty()) j["elements_dropped"] = stats.elements_dropped;
  return j;
}

}  // namespace

nlohmann::json write_result(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r) {
  const Plan& p = run.plan;
  Job& job = r.job;
  const InputCloud& in = job.in;
  const auto t0 = std::chrono::steady_clock::now();
  nlohmann::json rec;
  rec["format"] = in.cloud.meta.format;
  rec["points"] = in.cloud.size() + in.dropped_invalid;
  rec["dropped_invalid"] = in.dropped_invalid;
  rec["origin"] = job.origin;
  const std::string& main = job.outputs.front();
  const std::string fmt = main == "-" && settings.format.empty() ? "" : cli::format_of(main, settings);
  cli::StageTimer timer(ctx, "write");
  switch (p.mode) {
    case Mode::kFps: {
      rec["samples"] = r.selection.size();
      rec["start"] = in.file_row(r.start);
      rec["device"] = run.fps->device().to_string();
      if (p.emit_indices) {
        to_file_rows(r.selection, in);
        write_indices(ctx, main, fmt, r.selection);
        break;
      }
      RowStats stats;
      const std::vector<std::int64_t> rows(r.selection.begin(), r.selection.end());
      const PointCloud sampled = take_rows(in.cloud, rows, p.drop_faces, stats);
      write_cloud(ctx, main, fmt.empty() ? in.cloud.meta.format : fmt, sampled);
      rec.update(elements_json(stats));
      break;
    }
    case Mode::kBall:
    case Mode::kKnn: {
      points::Neighbors& nb = r.neighbors;
      rec["queries"] = nb.queries;
      rec["k"] = nb.k;
      if (p.mode == Mode::kBall) {
        rec["radius"] = p.ball.radius;
        rec["empty_balls"] = std::count(nb.counts.begin(), nb.counts.end(), 0);
      }
      rec["device"] = run.neighbors->device().to_string();
      to_file_rows(nb.indices, in);
      const std::vector<std::int64_t> shape{nb.queries, nb.k};
      // Every array is encoded before the first is written, so only a failing disk can split an item's files.
      std::vector<std::string> blobs;
      if (p.arrays.indices) blobs.push_back(npy_bytes(nb.indices.data(), "<i4", shape));
      if (p.arrays.distances) blobs.push_back(npy_bytes(nb.distances.data(), "<f4", shape));
      if (p.arrays.counts) blobs.push_back(npy_bytes(nb.counts.data(), "<i4", {nb.queries}));
      for (std::size_t i = 0; i < blobs.size(); ++i) write_bytes(ctx, job.outputs[i], blobs[i]);
      break;
    }
    case Mode::kInterp: {
      const InputCloud& sparse = *run.other;
      rec["sparse_points"] = sparse.cloud.size();
      rec["device"] = run.neighbors->device().to_string();
      if (p.emit_weights) {
        to_file_rows(r.weights.indices, sparse);
        const std::vector<std::int64_t> shape{r.weights.queries, 3};
        const std::string idx = npy_bytes(r.weights.indices.data(), "<i4", shape);
        const std::string w = npy_bytes(r.weights.weights.data(), "<f4", shape);
        write_bytes(ctx, job.outputs[0], idx);
        write_bytes(ctx, job.outputs[1], w);
        break;
      }
      PointCloud& dense = job.in.cloud;
      const std::vector<std::string> names =
          run.interp_columns.empty() ? default_columns(sparse.cloud, dense) : run.interp_columns;
      if (names.empty())
        throw DataError(in.name + ": nothing to interpolate: " + sparse.name +
                        " has no per-point attribute this cloud lacks (name them with --attributes)");
      for (const auto& name : names) interpolate_column(dense, *sparse.cloud.find(name), r.weights);
      rec["attributes"] = names;
      RowStats stats;
      if (p.drop_faces) drop_elements(dense, stats);
      write_cloud(ctx, main, fmt.empty() ? dense.meta.format : fmt, dense);
      rec.update(elements_json(stats));
      break;
    }
  }
  timer.stop();
  rec["seconds_read"] = job.seconds_read;
  rec["seconds_compute"] = r.seconds_compute;
  if (r.batch > 1) rec["batch"] = r.batch;
  rec["seconds_write"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rec;
}

}  // namespace s3d::pc_sample
