#include "job.hpp"

#include <chrono>
#include <cmath>

#include "s3d/core/errors.hpp"

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
  else
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

Job load_job(const cli::Item& item, cli::ItemContext& ctx, const Run& run) {
  const auto t0 = Clock::now();
  Job job;
  job.outputs = planned_outputs(item, ctx, run.plan);
  const std::string& input = item.inputs.front();
  const std::string path = ctx.readable_path(input);
  job.in = read_input_cloud(path, input == "-" ? "<stdin>" : input, run.plan.input_format, run.plan.drop_invalid);
  // The local origin is the input's bounding-box centre; the second cloud uses the same one, so both share
  // one frame.
  job.origin = bbox_centre(job.in.cloud);
  job.local = local_positions(job.in.cloud, job.origin);
  if (run.other) job.other_local = local_positions(run.other->cloud, job.origin);
  job.seconds_read = seconds_since(t0);
  return job;
}

Result compute(const cli::Item& item, Run& run, Job job) {
  const auto t0 = Clock::now();
  const Plan& p = run.plan;
  const std::string& name = job.in.name;
  const std::int64_t n = static_cast<std::int64_t>(job.in.cloud.size());
  Result r;
  switch (p.mode) {
    case Mode::kFps: {
      std::int64_t m = p.samples > 0 ? p.samples : static_cast<std::int64_t>(std::ceil(p.ratio * double(n)));
      if (m > n) {
        if (!p.allow_fewer)
          throw DataError(name + ": -n " + std::to_string(m) + " exceeds the cloud's " + std::to_string(n) +
                          " points (--allow-fewer samples all of them)");
        m = n;
      }
      r.start =
          p.random_start ? static_cast<std::int64_t>(splitmix64(p.seed + item.index) % std::uint64_t(n)) : p.start;
      if (r.start >= n)
        throw DataError(name + ": --start " + std::to_string(r.start) + " is not a point of the cloud (" +
                        std::to_string(n) + " points)");
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
  }
  r.seconds_compute = seconds_since(t0);
  r.job = std::move(job);
  return r;
}

}  // namespace s3d::pc_sample
