// pc-sample ball and knn: neighbour indices, distances and counts of every query (the cloud itself or
// --queries) as .npy arrays.
#include <algorithm>
#include <cmath>

#include "command.hpp"
#include "outputs.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

/// Where the queries come from, and which arrays are written.
void add_neighbour_outputs(CLI::App& sub, std::string& queries, std::string& emit) {
  sub.add_option("--queries", queries, "query points from this cloud file (default: the cloud itself)");
  sub.add_option("--emit", emit,
                 "arrays to write: indices at -o NAME.npy, distances at NAME.dist.npy, counts at NAME.counts.npy")
      ->capture_default_str();
}

void add_ball_flags(CLI::App& ball, Flags& f) {
  ball.add_option("--radius", f.radius, "r > 0: a point is inside iff its distance is < r")->required();
  ball.add_option("--min-radius", f.min_radius, "also d >= this (mmcv's min_radius; 0 = off)")->capture_default_str();
  ball.add_option("-k,--k", f.ball_k, "neighbours per query (1..1024)")->capture_default_str();
  ball.add_option("--pad", f.ball_pad, "missing slots: -1 (distance inf), or first (the first hit repeated)")
      ->capture_default_str()
      ->check(CLI::IsMember({"-1", "first"}));
  ball.add_option("--order", f.order, "index: the first K in index order (pointnet2); distance: the K nearest")
      ->capture_default_str()
      ->check(CLI::IsMember({"index", "distance"}));
  add_neighbour_outputs(ball, f.ball_queries, f.ball_emit);
}

void add_knn_flags(CLI::App& knn, Flags& f) {
  knn.add_option("-k,--k", f.knn_k, "neighbours per query (1..1024)")->capture_default_str();
  knn.add_flag("--exclude-self", f.exclude_self, "self queries: point i is never its own neighbour");
  knn.add_option("--pad", f.knn_pad,
                 "allow K > the points available; missing slots: -1 (distance inf) or first (the nearest repeated)")
      ->check(CLI::IsMember({"-1", "first"}));
  add_neighbour_outputs(knn, f.knn_queries, f.knn_emit);
}

void ball_plan(const Flags& f, Plan& p) {
  p.ball.radius = f.radius;
  p.ball.min_radius = f.min_radius;
  p.ball.k = f.ball_k;
  p.ball.pad = parse_pad("--pad", f.ball_pad);
  S3D_EXPECTS(f.order == "index" || f.order == "distance",
              "--order: expected index or distance, got '" + f.order + "'");
  p.ball.order = f.order == "index" ? points::BallOrder::kIndex : points::BallOrder::kDistance;
  S3D_EXPECTS(std::isfinite(f.radius) && f.radius > 0.0f,
              "--radius must be finite and > 0 (got " + std::to_string(f.radius) + ")");
  validate_flags(p.ball);
  p.queries = f.ball_queries;
  p.arrays = parse_arrays(f.ball_emit);
  p.local_origin = true;
}

void knn_plan(const Flags& f, Plan& p) {
  p.knn.k = f.knn_k;
  p.knn.exclude_self = f.exclude_self;
  p.knn.allow_fewer = !f.knn_pad.empty();
  if (p.knn.allow_fewer) p.knn.pad = parse_pad("--pad", f.knn_pad);
  validate_flags(p.knn);
  p.queries = f.knn_queries;
  S3D_EXPECTS(!(f.exclude_self && !p.queries.empty()), "--exclude-self: only without --queries (self queries)");
  p.arrays = parse_arrays(f.knn_emit);
  p.local_origin = true;
}

std::vector<std::string> outputs(const cli::Item&, cli::ItemContext& ctx, const Plan& p) {
  const std::string main = ctx.output_path(0, p.mode == Mode::kBall ? ".ball.npy" : ".knn.npy");
  if (main.empty()) return {main};
  if (main == "-") {
    S3D_EXPECTS(p.arrays.count() == 1, "-o -: stdout takes one array: --emit indices, distances or counts");
    return {main};
  }
  std::vector<std::string> out;
  if (p.arrays.indices) out.push_back(main);
  if (p.arrays.distances) out.push_back(derived_npy(main, "dist"));
  if (p.arrays.counts) out.push_back(derived_npy(main, "counts"));
  return out;
}

void check_outputs(const Plan& p, const cli::CommonSettings& s) {
  for (const auto& o : s.outputs) {
    if (o == "-" && p.arrays.count() != 1)
      throw InvalidArgument("-o -: stdout takes one array: --emit indices, distances or counts");
    const std::string fmt = cli::format_of(o, s);
    if (!fmt.empty() && fmt != "npy")
      throw InvalidArgument("-o " + o + ": neighbour arrays are .npy files (-o NAME.npy)");
  }
  if (p.arrays.count() > 1) require_npy_names(s);
}

void make_engine(Run& run, const Device& device) { run.neighbors = std::make_unique<points::NeighborEngine>(device); }

PointsView<const float> queries_of(const Job& job) {
  return job.other_local.empty() ? PointsView<const float>{}
                                 : PointsView<const float>{job.other_local.data(), job.other_local.size() / 3};
}

void ball_compute(const cli::Item&, Run& run, Job& job, Result& r) {
  r.neighbors = run.neighbors->ball_query({job.local.data(), job.local.size() / 3}, queries_of(job), run.plan.ball);
}

void knn_compute(const cli::Item&, Run& run, Job& job, Result& r) {
  const points::KnnParams& knn = run.plan.knn;
  const std::int64_t available = static_cast<std::int64_t>(job.in.cloud.size()) - (knn.exclude_self ? 1 : 0);
  if (knn.k > available && !knn.allow_fewer)
    throw DataError(job.in.name + ": -k " + std::to_string(knn.k) + " exceeds the " + std::to_string(available) +
                    " points available (--pad -1|first fills the missing neighbours)");
  r.neighbors = run.neighbors->knn({job.local.data(), job.local.size() / 3}, queries_of(job), knn);
}

void write(cli::ItemContext& ctx, const cli::CommonSettings&, const Run& run, Result& r, nlohmann::json& rec) {
  const Plan& p = run.plan;
  points::Neighbors& nb = r.neighbors;
  cloud_fields(rec, r.job);
  rec["queries"] = nb.queries;
  rec["k"] = nb.k;
  if (p.mode == Mode::kBall) {
    rec["radius"] = p.ball.radius;
    rec["empty_balls"] = std::count(nb.counts.begin(), nb.counts.end(), 0);
  }
  rec["device"] = run.neighbors->device().to_string();
  points::to_file_rows(nb.indices, r.job.in.rows);
  const std::vector<std::int64_t> shape{nb.queries, nb.k};
  // Every array is encoded before the first is written, so only a failing disk can split an item's files.
  std::vector<std::string> blobs;
  if (p.arrays.indices) blobs.push_back(io::npy_bytes(nb.indices.data(), "<i4", shape));
  if (p.arrays.distances) blobs.push_back(io::npy_bytes(nb.distances.data(), "<f4", shape));
  if (p.arrays.counts) blobs.push_back(io::npy_bytes(nb.counts.data(), "<i4", {nb.queries}));
  for (std::size_t i = 0; i < blobs.size(); ++i) write_bytes(ctx, r.job.outputs[i], blobs[i]);
}

}  // namespace

Command ball_command() {
  return {"ball",         "ball query (pointnet2): up to K points with d < r per query",
          Mode::kBall,    &add_ball_flags,
          &ball_plan,     &outputs,
          &check_outputs, &make_engine,
          &ball_compute,  &write};
}

Command knn_command() {
  return {"knn",          "exact k nearest neighbours, ascending distance, ties to the smaller index",
          Mode::kKnn,     &add_knn_flags,
          &knn_plan,      &outputs,
          &check_outputs, &make_engine,
          &knn_compute,   &write};
}

}  // namespace s3d::pc_sample
