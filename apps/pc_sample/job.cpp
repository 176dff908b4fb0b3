#include "job.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include "s3d/core/errors.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// SplitMix64 (Steele et al. 2014): a --seed and the item's index give the same start on every machine and
/// shard, unlike std::uniform_int_distribution, whose output the standard leaves to the library.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

PointsView<const float> view_of(const std::vector<float>& xyz) { return {xyz.data(), xyz.size() / 3}; }

/// The sparse columns interp writes by default: every numeric fixed column the dense cloud lacks.
bool interpolable(const AttributeColumn& c) { return !c.is_list && c.name != "x" && c.name != "y" && c.name != "z"; }

}  // namespace

void prepare_run(Run& run, const Device& device) {
  const Plan& p = run.plan;
  if (p.mode == Mode::kFps)
    run.fps = std::make_unique<points::FpsEngine>(device);
  else if (p.mode == Mode::kVoxel)
    run.voxels = std::make_unique<points::VoxelEngine>(device);
  else if (p.mode == Mode::kRulebook) {
    run.rulebooks = std::make_unique<points::RulebookEngine>(device);
    if (p.rulebook_from_cloud) run.voxels = std::make_unique<points::VoxelEngine>(device);
  } else
    run.neighbors = std::make_unique<points::NeighborEngine>(device);
  const std::string& other = p.mode == Mode::kInterp ? p.from : p.queries;
  if (other.empty()) return;
  S3D_EXPECTS(other != "-", "--queries / --from: a file, not stdin");
  // --input-format is for the input (stdin); this file's format comes from its extension.
  run.other = read_input_cloud(other, other, io::CloudFormat::kAuto, p.drop_invalid);
  for (const auto& name : p.attributes) {
    const AttributeColumn* c = run.other->cloud.find(name);
    S3D_EXPECTS(c != nullptr, "--attributes " + name + ": " + other + " has no such per-point attribute");
    S3D_EXPECTS(interpolable(*c), "--attributes " + name + ": not interpolable (coordinates and lists are not)");
    run.interp_columns.push_back(name);
  }
}

Job load_job(const cli::Item& item, cli::ItemContext& ctx, const Run& run, CloudPool& clouds) {
  const auto t0 = Clock::now();
  Job job;
  job.outputs = planned_outputs(item, ctx, run.plan);
  const std::string& input = item.inputs.front();
  const std::string path = ctx.readable_path(input);
  if (run.plan.mode == Mode::kRulebook && !run.plan.rulebook_from_cloud) {
    job.in.name = input == "-" ? "<stdin>" : input;
    job.coords.coords = read_coords_npy(path, job.in.name);
    job.coords.shape = run.plan.shape;
    std::int32_t most = 0;
    for (std::size_t r = 0; r < job.coords.coords.size(); r += 4) most = std::max(most, job.coords.coords[r]);
    job.coords.batch_size = run.plan.rulebook_batch_size > 0 ? run.plan.rulebook_batch_size : most + 1;
    if (most == INT32_MAX) throw DataError(job.in.name + ": batch id 2^31 - 1 leaves no batch size");
    job.seconds_read = seconds_since(t0);
    return job;
  }
  job.in = read_input_cloud(path, input == "-" ? "<stdin>" : input, run.plan.input_format, run.plan.drop_invalid,
                            clouds.take());
  // The local origin is the input's bounding-box centre; the second cloud uses the same one, so both share
  // one frame.
  // Voxel grids are anchored in the file's frame (world, range) and would move with a local origin.
  if (run.plan.mode != Mode::kVoxel && run.plan.mode != Mode::kRulebook) job.origin = points::bbox_centre(job.in.cloud);
  job.local = points::local_positions(job.in.cloud, job.origin);
  if (run.other) job.other_local = points::local_positions(run.other->cloud, job.origin);
  job.seconds_read = seconds_since(t0);
  return job;
}

namespace {

/// ⌈r·N⌉, where an r·N within 1e-9 (relative) of a whole number is that number: 0.07 × 100 is 7, not the 8 that
/// the double product 7.000000000000001 would give. At least 1.
std::int64_t samples_for_ratio(double ratio, std::int64_t n) {
  const double x = ratio * static_cast<double>(n);
  const double whole = std::round(x);
  const double m = std::fabs(x - whole) <= 1e-9 * std::max(1.0, x) ? whole : std::ceil(x);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(m));
}

/// fps: M and the start of one item. @throws DataError naming the input.
std::pair<std::int64_t, std::int64_t> fps_call(const cli::Item& item, const Plan& p, const Job& job) {
  const std::string& name = job.in.name;
  const std::int64_t n = static_cast<std::int64_t>(job.in.cloud.size());
  std::int64_t m = p.samples > 0 ? p.samples : samples_for_ratio(p.ratio, n);
  if (m > n) {
    if (!p.allow_fewer)
      throw DataError(name + ": -n " + std::to_string(m) + " exceeds the cloud's " + std::to_string(n) +
                      " points (--allow-fewer samples all of them)");
    m = n;
  }
  if (p.random_start) return {m, static_cast<std::int64_t>(splitmix64(p.seed + item.index) % std::uint64_t(n))};
  if (p.start < 0) return {m, 0};  // no --start: the first point kept
  // --start names a row of the file, as every index pc-sample writes does, also under --drop-invalid.
  const auto& rows = job.in.rows;
  const std::int64_t file_rows = n + static_cast<std::int64_t>(job.in.dropped_invalid);
  if (p.start >= file_rows)
    throw DataError(name + ": --start " + std::to_string(p.start) + " is not a point of the cloud (" +
                    std::to_string(file_rows) + " points)");
  if (rows.empty()) return {m, p.start};
  const auto it = std::lower_bound(rows.begin(), rows.end(), p.start);
  if (it == rows.end() || *it != p.start)
    throw DataError(name + ": --start " + std::to_string(p.start) +
                    " is a point that --drop-invalid dropped (a non-finite coordinate)");
  return {m, static_cast<std::int64_t>(it - rows.begin())};
}

}  // namespace

Result compute_grouped(const cli::Item& item, Run& run, Job job, const cli::NextItem<Job>& next) {
  if (auto it = run.grouped.find(item.index); it != run.grouped.end()) {
    Result r;
    r.selection = std::move(it->second.selection);
    r.start = it->second.start;
    r.seconds_compute = it->second.seconds_compute;
    r.batch = it->second.batch;
    run.grouped.erase(it);
    r.job = std::move(job);
    return r;
  }
  const Plan& p = run.plan;
  if (p.mode != Mode::kFps || p.batch <= 1 || next.ahead.empty()) return compute(item, run, std::move(job));

  const auto t0 = Clock::now();
  // The group: this item, then the loaded items after it while their M and start are valid.
  std::vector<std::pair<const cli::Item*, const Job*>> group{{&item, &job}};
  points::FpsBatch batch;
  auto add = [&](const cli::Item& it, const Job& j) {
    const auto [m, start] = fps_call(it, p, j);
    batch.lengths.push_back(static_cast<std::int64_t>(j.in.cloud.size()));
    batch.samples.push_back(m);
    batch.starts.push_back(start);
  };
  add(item, job);  // this item's own error propagates
  for (const auto& [it, j] : next.ahead) {
    if (static_cast<int>(group.size()) >= p.batch) break;
    try {
      add(*it, *j);
    } catch (const DataError&) {
      break;  // it fails on its own handle
    }
    group.emplace_back(it, j);
  }
  std::vector<float> xyz;
  for (const auto& g : group) xyz.insert(xyz.end(), g.second->local.begin(), g.second->local.end());
  batch.xyz = xyz.data();
  const std::vector<std::int32_t> all = run.fps->run(batch);
  const double seconds = seconds_since(t0) / static_cast<double>(group.size());

  Result r;
  std::size_t offset = 0;
  for (std::size_t b = 0; b < group.size(); ++b) {
    const std::size_t m = static_cast<std::size_t>(batch.samples[b]);
    std::vector<std::int32_t> selection(all.begin() + offset, all.begin() + offset + m);
    offset += m;
    if (b == 0) {
      r.selection = std::move(selection);
      r.start = batch.starts[0];
      r.seconds_compute = seconds;
      r.batch = static_cast<int>(group.size());
    } else {
      run.grouped[group[b].first->index] =
          GroupedSelection{std::move(selection), batch.starts[b], seconds, static_cast<int>(group.size())};
    }
  }
  r.job = std::move(job);
  return r;
}

Result compute(const cli::Item& item, Run& run, Job job) {
  const auto t0 = Clock::now();
  const Plan& p = run.plan;
  const std::string& name = job.in.name;
  const std::int64_t n = static_cast<std::int64_t>(job.in.cloud.size());
  Result r;
  switch (p.mode) {
    case Mode::kFps: {
      const auto [m, start] = fps_call(item, p, job);
      r.start = start;
      r.selection = run.fps->run(view_of(job.local), m, r.start);
      break;
    }
    case Mode::kKnn: {
      const bool self = job.other_local.empty();
      const std::int64_t available = n - (p.knn.exclude_self ? 1 : 0);
      if (p.knn.k > available && !p.knn.allow_fewer)
        throw DataError(name + ": -k " + std::to_string(p.knn.k) + " exceeds the " + std::to_string(available) +
                        " points available (--pad -1|first fills the missing neighbours)");
      r.neighbors =
          run.neighbors->knn(view_of(job.local), self ? PointsView<const float>{} : view_of(job.other_local), p.knn);
      break;
    }
    case Mode::kBall: {
      const bool self = job.other_local.empty();
      r.neighbors = run.neighbors->ball_query(view_of(job.local),
                                              self ? PointsView<const float>{} : view_of(job.other_local), p.ball);
      break;
    }
    case Mode::kInterp:
      r.weights = run.neighbors->three_nn(view_of(job.other_local), view_of(job.local));
      break;
    case Mode::kVoxel:
      r.voxels = run.voxels->voxelize(view_of(job.local), nullptr, p.voxel);
      break;
    case Mode::kRulebook:
      if (p.rulebook_from_cloud) {
        r.voxels = run.voxels->voxelize(view_of(job.local), nullptr, p.voxel);
        for (int a = 0; a < 3; ++a) {
          if (r.voxels.shape[a] > INT32_MAX)
            throw DataError(name + ": the voxel grid has " + std::to_string(r.voxels.shape[a]) +
                            " cells along an axis (rulebooks take at most 2^31 - 1)");
          job.coords.shape[a] = static_cast<std::int32_t>(r.voxels.shape[a]);
        }
        job.coords.batch_size = 1;
        job.coords.coords = r.voxels.coords;
      }
      r.layers = run_layers(*run.rulebooks, p, job.coords, name);
      break;
  }
  r.seconds_compute = seconds_since(t0);
  r.job = std::move(job);
  return r;
}

}  // namespace s3d::pc_sample
