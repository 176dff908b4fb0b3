#include "job.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include "command.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

PointsView<const float> view_of(const std::vector<float>& xyz) { return {xyz.data(), xyz.size() / 3}; }

/// The sparse columns interp writes by default: every numeric fixed column the dense cloud lacks.
bool interpolable(const AttributeColumn& c) { return !c.is_list && c.name != "x" && c.name != "y" && c.name != "z"; }

}  // namespace

void prepare_run(Run& run, const Device& device) {
  const Plan& p = run.plan;
  run.command = &command_of(p.mode);
  run.command->make_engine(run, device);
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
    std::vector<std::int32_t> rows = read_coords_npy(path, job.in.name);  // its errors name the input
    try {
      job.coords = points::coords_from_rows(std::move(rows), run.plan.shape, run.plan.rulebook_batch_size);
    } catch (const DataError& e) {
      throw DataError(job.in.name + ": " + e.what());
    }
    job.seconds_read = seconds_since(t0);
    return job;
  }
  job.in = read_input_cloud(path, input == "-" ? "<stdin>" : input, run.plan.input_format, run.plan.drop_invalid,
                            clouds.take());
  // The local origin is the input's bounding-box centre; the second cloud uses the same one, so both share
  // one frame.
  // Voxel grids are anchored in the file's frame (world, range) and would move with a local origin.
  if (run.plan.local_origin) job.origin = points::bbox_centre(job.in.cloud);
  job.local = points::local_positions(job.in.cloud, job.origin);
  if (run.other) job.other_local = points::local_positions(run.other->cloud, job.origin);
  job.seconds_read = seconds_since(t0);
  return job;
}

namespace {

// A group of FPS clouds for one launch: items (and their jobs) in input order with their M and start.
struct FpsGroup {
  std::vector<std::size_t> items;  // item indices
  std::vector<Job*> jobs;
  std::vector<PointsView<const float>> clouds;
  std::vector<std::int64_t> samples, starts;
  void add(const cli::Item& item, Job& job, const Plan& p) {
    const auto [m, start] = fps_samples_and_start(item, p, job);  // DataError: the item fails on its own call
    items.push_back(item.index);
    jobs.push_back(&job);
    clouds.push_back(view_of(job.local));
    samples.push_back(m);
    starts.push_back(start);
  }
  void append(const FpsGroup& more) {
    items.insert(items.end(), more.items.begin(), more.items.end());
    jobs.insert(jobs.end(), more.jobs.begin(), more.jobs.end());
    clouds.insert(clouds.end(), more.clouds.begin(), more.clouds.end());
    samples.insert(samples.end(), more.samples.begin(), more.samples.end());
    starts.insert(starts.end(), more.starts.begin(), more.starts.end());
  }
};

// Up to B loaded items of `ahead` from `from` on, while their M and start are valid.
FpsGroup group_from(const cli::NextItem<Job>& next, std::size_t from, int batch, const Plan& p) {
  FpsGroup g;
  for (std::size_t k = from; k < next.ahead.size() && static_cast<int>(g.items.size()) < batch; ++k) {
    try {
      g.add(*next.ahead[k].first, *next.ahead[k].second, p);
    } catch (const DataError&) {
      break;
    }
  }
  return g;
}

}  // namespace

std::vector<Result> compute_group(const cli::Item& item, Run& run, Job job, const cli::NextItem<Job>& next) {
  const Plan& p = run.plan;
  std::vector<Result> results;
  if (p.mode != Mode::kFps || p.batch <= 1 || !run.fps_batches) {
    results.push_back(compute(item, run, std::move(job)));
    return results;
  }
  const auto t0 = Clock::now();
  points::FpsPipeline& pipe = *run.fps_batches;
  // This call's group: the one queued by the previous call when it starts with this item and the frame hands
  // the same items after it (it does unless the batch stopped), else this item and the loaded ones after it.
  FpsGroup group;
  group.add(item, job, p);  // this item's own error propagates, before anything is queued for it
  bool queued = false;
  if (!run.fps_queued.empty() && run.fps_queued.front().front() == item.index) {
    const std::vector<std::size_t>& members = run.fps_queued.front();
    queued = members.size() - 1 <= next.ahead.size();
    for (std::size_t k = 1; queued && k < members.size(); ++k) queued = next.ahead[k - 1].first->index == members[k];
    for (std::size_t k = 1; queued && k < members.size(); ++k)
      group.add(*next.ahead[k - 1].first, *next.ahead[k - 1].second, p);
  }
  if (!queued) {
    pipe.drain();  // groups queued for items the frame no longer hands over
    run.fps_queued.clear();
    group.append(group_from(next, 0, p.batch - 1, p));
    pipe.submit(group.clouds, group.samples, group.starts);
    run.fps_queued.push_back(group.items);
  }
  // The next groups, while the pipeline has room: they upload while this one samples.
  std::size_t after = 0;  // ahead's index of the first item after the groups queued (this item is not in it)
  for (const auto& members : run.fps_queued) after += members.size();
  after -= 1;
  while (!pipe.full()) {
    FpsGroup later = group_from(next, after, p.batch, p);
    if (later.items.empty() || !pipe.fits(later.clouds)) break;
    try {
      pipe.submit(later.clouds, later.samples, later.starts);
    } catch (const DataError&) {
      break;  // a cloud of that group fails in its own call, naming its own file
    }
    run.fps_queued.push_back(later.items);
    after += later.items.size();
  }
  std::vector<std::vector<std::int32_t>> selections = pipe.retrieve();
  run.fps_queued.pop_front();
  const double seconds = seconds_since(t0) / static_cast<double>(group.items.size());
  results.resize(group.items.size());
  for (std::size_t b = 0; b < group.items.size(); ++b) {
    Result& r = results[b];
    r.selection = std::move(selections[b]);
    r.start = group.starts[b];
    r.seconds_compute = seconds;
    r.batch = static_cast<int>(group.items.size());
    r.taken = b > 0;
    r.job = std::move(*group.jobs[b]);
  }
  return results;
}

Result compute(const cli::Item& item, Run& run, Job job) {
  const auto t0 = Clock::now();
  Result r;
  run.command->compute(item, run, job, r);
  r.seconds_compute = seconds_since(t0);
  r.job = std::move(job);
  return r;
}

}  // namespace s3d::pc_sample
