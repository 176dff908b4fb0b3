// pc-sample's write stage: the item's outputs from the engine's answer, and its record.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "cloud_rows.hpp"
#include "job.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/overlays.hpp"

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

/// A fixed (non-list) column's values as doubles, [N, components].
std::vector<double> column_values(const AttributeColumn& c, std::size_t n) {
  std::vector<double> values(n * static_cast<std::size_t>(c.components));
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < c.components; ++k) values[i * c.components + k] = c.value(i, k);
  return values;
}

/// The voxelised cloud: one point per voxel, its representative's row with every fixed column aggregated as
/// the positions are (mean: the fp64 mean of the kept points, integers rounded to the nearest; first and
/// nearest: the representative's values). Lists and the other elements cannot be averaged: lists are the
/// representative's, elements are dropped (counted in the record).
PointCloud voxel_cloud(const PointCloud& in, const points::Voxels& v, points::VoxelAggregate aggregate,
                       RowStats& stats) {
  const std::vector<std::int64_t> rows(v.representative.begin(), v.representative.end());
  PointCloud out = take_rows(in, rows, true, stats);
  if (aggregate != points::VoxelAggregate::kMean) return out;
  std::copy(v.xyz.begin(), v.xyz.end(), out.xyz.begin());
  for (const AttributeColumn& src : in.attributes) {
    if (src.is_list) continue;
    const std::vector<double> values = column_values(src, in.size());
    const std::vector<double> mean = points::aggregate_attribute(v, aggregate, values.data(), src.components);
    AttributeColumn& dst = *out.find(src.name);
    const bool integer = !is_floating(dst.type);
    for (std::size_t j = 0; j < out.size(); ++j)
      for (int k = 0; k < src.components; ++k) {
        const double m = mean[j * src.components + k];
        dst.set_value(j, k, integer ? std::nearbyint(m) : m);
      }
    // Coordinates stored as another type than float32 (double): the positions follow their mean, so that the
    // writer keeps the doubles.
    for (int a = 0; a < 3; ++a)
      if (src.name == std::string(1, "xyz"[a]))
        for (std::size_t j = 0; j < out.size(); ++j) out.xyz[3 * j + a] = static_cast<float>(mean[j]);
  }
  return out;
}

nlohmann::json elements_json(const RowStats& stats) {
  nlohmann::json j = nlohmann::json::object();
  if (stats.faces_dropped) j["faces_dropped"] = stats.faces_dropped;
  if (!stats.elements_dropped.empty()) j["elements_dropped"] = stats.elements_dropped;
  return j;
}

/// --emit preview: the input seen from above, the fps samples or the voxels' points marked.
void write_preview(cli::ItemContext& ctx, const std::string& path, const Result& r, const Plan& p) {
  const Job& job = r.job;
  std::vector<float> marks;
  if (p.mode == Mode::kFps) {
    marks.reserve(r.selection.size() * 3);
    for (std::int32_t row : r.selection)
      marks.insert(marks.end(), job.local.begin() + 3 * row, job.local.begin() + 3 * row + 3);
  } else {
    marks = r.voxels.xyz;
  }
  const std::string title = std::filesystem::path(job.in.name).filename().string() + ": " +
                            std::to_string(job.local.size() / 3) + " points, " + std::to_string(marks.size() / 3) +
                            (p.mode == Mode::kFps ? " samples" : " voxels") + " (red), seen from +z";
  const io::ImageU8 picture =
      io::plot_top_down({job.local.data(), job.local.size() / 3}, {marks.data(), marks.size() / 3}, title);
  ctx.write_atomically(path, [&](const std::string& tmp) { io::write_image(tmp, picture); });
}

}  // namespace

nlohmann::json write_result(cli::ItemContext& ctx, const cli::CommonSettings& settings, const Run& run, Result& r) {
  const Plan& p = run.plan;
  Job& job = r.job;
  const InputCloud& in = job.in;
  const auto t0 = std::chrono::steady_clock::now();
  nlohmann::json rec;
  if (p.mode == Mode::kRulebook) {
    cli::StageTimer timer(ctx, "write");
    const std::string& main = job.outputs.front();
    const std::string fmt = main == "-" && settings.format.empty() ? "npz" : cli::format_of(main, settings);
    S3D_EXPECTS(fmt == "npz" || fmt == "npy", main + ": a rulebook is written as .npz (every array) or .npy (pairs)");
    if (p.rulebook_from_cloud) {
      rec["format"] = in.cloud.meta.format;
      rec["points"] = in.cloud.size() + in.dropped_invalid;
      rec["dropped_invalid"] = in.dropped_invalid;
      rec["grid_origin"] = r.voxels.origin;
    }
    rec["voxels"] = job.coords.count();
    rec["shape"] = job.coords.shape;
    rec["batch_size"] = job.coords.batch_size;
    rec["device"] = run.rulebooks->device().to_string();
    rec["layers"] = rulebook_record(r.layers);
    write_bytes(ctx, main, rulebook_file(r.layers, p.chained, fmt == "npy"));
    timer.stop();
    rec["seconds_read"] = job.seconds_read;
    rec["seconds_compute"] = r.seconds_compute;
    rec["seconds_write"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rec;
  }
  rec["format"] = in.cloud.meta.format;
  rec["points"] = in.cloud.size() + in.dropped_invalid;
  rec["dropped_invalid"] = in.dropped_invalid;
  rec["origin"] = job.origin;
  const std::string& main = job.outputs.front();
  const std::string fmt =
      !p.emit_samples || (main == "-" && settings.format.empty()) ? "" : cli::format_of(main, settings);
  cli::StageTimer timer(ctx, "write");
  if (p.emit_preview) write_preview(ctx, job.outputs.back(), r, p);
  switch (p.mode) {
    case Mode::kFps: {
      if (!p.emit_samples) {
        rec["samples"] = r.selection.size();
        rec["start"] = in.file_row(r.start);
        rec["device"] = run.fps->device().to_string();
        break;
      }
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
      if (p.arrays.indices) blobs.push_back(io::npy_bytes(nb.indices.data(), "<i4", shape));
      if (p.arrays.distances) blobs.push_back(io::npy_bytes(nb.distances.data(), "<f4", shape));
      if (p.arrays.counts) blobs.push_back(io::npy_bytes(nb.counts.data(), "<i4", {nb.queries}));
      for (std::size_t i = 0; i < blobs.size(); ++i) write_bytes(ctx, job.outputs[i], blobs[i]);
      break;
    }
    case Mode::kVoxel: {
      const points::Voxels& v = r.voxels;
      std::int64_t kept = 0;
      for (std::int32_t c : v.points_per_voxel) kept += c;
      rec["voxels"] = v.count;
      rec["points_kept"] = kept;
      rec["dropped_out_of_range"] = v.dropped_out_of_range;
      rec["dropped_over_max_points"] = v.dropped_over_max_points;
      rec["dropped_over_max_voxels"] = v.dropped_over_max_voxels;
      rec["shape"] = v.shape;
      rec["grid_origin"] = v.origin;
      rec["device"] = run.voxels->device().to_string();
      if (!p.emit_samples) break;
      if (!p.emit_voxels) {
        RowStats stats;
        const PointCloud out = voxel_cloud(in.cloud, v, p.voxel.aggregate, stats);
        write_cloud(ctx, main, fmt.empty() ? in.cloud.meta.format : fmt, out);
        rec.update(elements_json(stats));
        break;
      }
      // features: the aggregated xyz, then every fixed non-coordinate column's components, as float32.
      std::vector<std::vector<double>> columns;
      std::vector<std::string> names{"x", "y", "z"};
      for (const AttributeColumn& c : in.cloud.attributes) {
        if (c.is_list || c.name == "x" || c.name == "y" || c.name == "z") continue;
        const std::vector<double> values = column_values(c, in.cloud.size());
        columns.push_back(points::aggregate_attribute(v, p.voxel.aggregate, values.data(), c.components));
        for (int k = 0; k < c.components; ++k)
          names.push_back(c.components == 1 ? c.name : c.name + "[" + std::to_string(k) + "]");
      }
      const std::size_t width = names.size(), m = static_cast<std::size_t>(v.count);
      std::vector<float> features(m * width);
      for (std::size_t j = 0; j < m; ++j) {
        std::size_t at = j * width;
        for (int a = 0; a < 3; ++a) features[at++] = v.xyz[3 * j + a];
        for (const auto& col : columns) {
          const std::size_t comps = col.size() / std::max<std::size_t>(m, 1);
          for (std::size_t k = 0; k < comps; ++k) features[at++] = static_cast<float>(col[j * comps + k]);
        }
      }
      // The map names rows of the input file (--drop-invalid rows map to -1).
      std::vector<std::int32_t> point_voxel(in.cloud.size() + in.dropped_invalid, -1);
      for (std::size_t i = 0; i < v.point_voxel.size(); ++i)
        point_voxel[static_cast<std::size_t>(in.file_row(static_cast<std::int64_t>(i)))] = v.point_voxel[i];
      rec["features"] = names;
      const std::vector<std::int64_t> coords_shape{v.count, 4},
          feature_shape{v.count, static_cast<std::int64_t>(width)};
      const std::string coords = io::npy_bytes(v.coords.data(), "<i4", coords_shape);
      const std::string feats = io::npy_bytes(features.data(), "<f4", feature_shape);
      const std::string map = io::npy_bytes(point_voxel.data(), "<i4", {static_cast<std::int64_t>(point_voxel.size())});
      write_bytes(ctx, job.outputs[0], coords);
      write_bytes(ctx, job.outputs[1], feats);
      write_bytes(ctx, job.outputs[2], map);
      break;
    }
    case Mode::kInterp: {
      const InputCloud& sparse = *run.other;
      rec["sparse_points"] = sparse.cloud.size();
      rec["device"] = run.neighbors->device().to_string();
      if (p.emit_weights) {
        to_file_rows(r.weights.indices, sparse);
        const std::vector<std::int64_t> shape{r.weights.queries, 3};
        const std::string idx = io::npy_bytes(r.weights.indices.data(), "<i4", shape);
        const std::string w = io::npy_bytes(r.weights.weights.data(), "<f4", shape);
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
    case Mode::kRulebook:
      break;  // above
  }
  timer.stop();
  rec["seconds_read"] = job.seconds_read;
  rec["seconds_compute"] = r.seconds_compute;
  if (r.batch > 1) rec["batch"] = r.batch;
  rec["seconds_write"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rec;
}

}  // namespace s3d::pc_sample
