// pc-sample's write stage: the item's outputs from the engine's answer, and its record.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "job.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/overlays.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

nlohmann::json elements_json(const points::ElementChanges& stats) {
  nlohmann::json j = nlohmann::json::object();
  if (stats.faces_dropped) j["faces_dropped"] = stats.faces_dropped;
  if (!stats.elements_dropped.empty()) j["elements_dropped"] = stats.elements_dropped;
  return j;
}

/// --emit preview: the input seen from above, the fps samples or the voxels' points marked.
void write_preview(cli::ItemContext& ctx, const std::string& path, const Result& r, const Plan& p) {
  const Job& job = r.job;
  const std::vector<float> marks =
      p.mode == Mode::kFps ? points::gather_positions(job.local, r.selection) : r.voxels.xyz;
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
        points::to_file_rows(r.selection, in.rows);
        write_indices(ctx, main, fmt, r.selection);
        break;
      }
      points::ElementChanges stats;
      const std::vector<std::int64_t> rows(r.selection.begin(), r.selection.end());
      const PointCloud sampled = points::select_rows(in.cloud, rows, p.drop_faces, stats);
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
      points::to_file_rows(nb.indices, in.rows);
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
      rec["voxels"] = v.count;
      rec["points_kept"] = points::points_kept(v);
      rec["dropped_out_of_range"] = v.dropped_out_of_range;
      rec["dropped_over_max_points"] = v.dropped_over_max_points;
      rec["dropped_over_max_voxels"] = v.dropped_over_max_voxels;
      rec["shape"] = v.shape;
      rec["grid_origin"] = v.origin;
      rec["device"] = run.voxels->device().to_string();
      if (!p.emit_samples) break;
      if (!p.emit_voxels) {
        points::ElementChanges stats;
        const PointCloud out = points::voxel_downsample(in.cloud, v, p.voxel.aggregate, stats);
        write_cloud(ctx, main, fmt.empty() ? in.cloud.meta.format : fmt, out);
        rec.update(elements_json(stats));
        break;
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
        points::to_file_rows(r.weights.indices, sparse.rows);
        const std::vector<std::int64_t> shape{r.weights.queries, 3};
        const std::string idx = io::npy_bytes(r.weights.indices.data(), "<i4", shape);
        const std::string w = io::npy_bytes(r.weights.weights.data(), "<f4", shape);
        write_bytes(ctx, job.outputs[0], idx);
        write_bytes(ctx, job.outputs[1], w);
        break;
      }
      PointCloud& dense = job.in.cloud;
      const std::vector<std::string> names =
          run.interp_columns.empty() ? points::missing_columns(sparse.cloud, dense) : run.interp_columns;
      if (names.empty())
        throw DataError(in.name + ": nothing to interpolate: " + sparse.name +
                        " has no per-point attribute this cloud lacks (name them with --attributes)");
      points::interpolate_columns(dense, sparse.cloud, names, r.weights);
      rec["attributes"] = names;
      points::ElementChanges stats;
      if (p.drop_faces) points::drop_elements(dense, stats);
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
