// NeighborEngine: validation, the request each search becomes, and the one place that chooses a backend.
#include "s3d/points/neighbors.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "neighbors_impl.hpp"
#include "point_checks.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/select_backend.hpp"

namespace s3d::points {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void check_points(PointsView<const float> points, const char* what) {
  S3D_EXPECTS(points.size == 0 || points.xyz != nullptr, std::string(what) + ": null coordinates");
  S3D_EXPECTS(points.size < (std::size_t{1} << 31), std::string(what) + ": more than 2^31 - 1 points");
}

SearchRequest knn_request(PointsView<const float> points, PointsView<const float> queries, const KnnParams& params) {
  params.validate();
  check_points(points, "kNN points");
  check_points(queries, "kNN queries");
  S3D_EXPECTS(points.size > 0, "kNN: the cloud is empty");
  S3D_EXPECTS(!(params.exclude_self && queries.size != 0), "kNN: exclude_self needs the cloud itself as the queries");
  const std::size_t available = points.size - (params.exclude_self ? 1 : 0);
  S3D_EXPECTS(params.allow_fewer || static_cast<std::size_t>(params.k) <= available,
              "kNN: K = " + std::to_string(params.k) + " but only " + std::to_string(available) +
                  " points are available (allow fewer to pad)");
  SearchRequest r;
  r.points = points;
  r.queries = queries;
  r.spec.k = params.k;
  r.spec.exclude_self = params.exclude_self;
  r.spec.pad_first = params.pad == NeighborPad::kFirst;
  r.points_per_cell = params.k / 3.f > 2.f ? params.k / 3.f : 2.f;
  return r;
}

SearchRequest ball_request(PointsView<const float> points, PointsView<const float> queries,
                           const BallQueryParams& params) {
  params.validate();
  check_points(points, "ball query points");
  check_points(queries, "ball query queries");
  S3D_EXPECTS(points.size > 0, "ball query: the cloud is empty");
  SearchRequest r;
  r.points = points;
  r.queries = queries;
  r.spec.k = params.k;
  r.spec.ball = true;
  r.spec.by_index = params.order == BallOrder::kIndex;
  r.spec.pad_first = params.pad == NeighborPad::kFirst;
  r.spec.radius2 = params.radius * params.radius;
  r.spec.min_radius2 = params.min_radius * params.min_radius;
  r.min_cell = params.radius;
  return r;
}

}  // namespace

void KnnParams::validate() const {
  S3D_EXPECTS(k >= 1 && k <= 1024, "KnnParams.k must be in [1, 1024], got " + std::to_string(k));
}

void BallQueryParams::validate() const {
  S3D_EXPECTS(std::isfinite(radius) && radius > 0.f,
              "BallQueryParams.radius must be finite and > 0, got " + num(radius));
  S3D_EXPECTS(std::isfinite(radius * radius) && radius * radius > 0.f,
              "BallQueryParams.radius squared must be a positive float, got " + num(radius));
  S3D_EXPECTS(std::isfinite(min_radius) && min_radius >= 0.f && min_radius < radius,
              "BallQueryParams.min_radius must be in [0, radius), got " + num(min_radius));
  S3D_EXPECTS(k >= 1 && k <= 1024, "BallQueryParams.k must be in [1, 1024], got " + std::to_string(k));
}

NeighborEngine::NeighborEngine(const Device& device) {
  impl_ = select_backend<NeighborEngine::Impl>(
      device, "NeighborEngine", [&](const Device& d) { return detail::make_cpu_neighbors(d); },
      S3D_CUDA_FACTORY([&](const Device& d) { return detail::make_cuda_neighbors(d); }));
}

NeighborEngine::~NeighborEngine() = default;
NeighborEngine::NeighborEngine(NeighborEngine&&) noexcept = default;
NeighborEngine& NeighborEngine::operator=(NeighborEngine&&) noexcept = default;

const Device& NeighborEngine::device() const { return impl_->device_; }

namespace {
Neighbors run_into_result(NeighborEngine::Impl& impl, SearchRequest request) {
  detail::check_finite(request.points, "points");
  detail::check_finite(request.queries, "queries");
  Neighbors out;
  out.queries = request.query_count();
  out.k = request.spec.k;
  const std::size_t slots = static_cast<std::size_t>(out.queries) * out.k;
  out.indices.resize(slots);
  out.distances.resize(slots);
  out.counts.resize(static_cast<std::size_t>(out.queries));
  request.indices = out.indices.data();
  request.distances = out.distances.data();
  request.counts = out.counts.data();
  if (out.queries > 0) impl.run_host(request);
  return out;
}
}  // namespace

Neighbors NeighborEngine::knn(PointsView<const float> points, PointsView<const float> queries,
                              const KnnParams& params) {
  return run_into_result(*impl_, knn_request(points, queries, params));
}

Neighbors NeighborEngine::ball_query(PointsView<const float> points, PointsView<const float> queries,
                                     const BallQueryParams& params) {
  return run_into_result(*impl_, ball_request(points, queries, params));
}

Interpolation NeighborEngine::three_nn(PointsView<const float> sparse, PointsView<const float> dense) {
  S3D_EXPECTS(dense.size > 0, "three-NN: the dense cloud is empty");
  KnnParams params;
  params.k = 3;
  params.allow_fewer = true;
  const Neighbors nn = knn(sparse, dense, params);
  Interpolation out;
  out.queries = nn.queries;
  out.indices = nn.indices;
  out.weights.assign(nn.distances.size(), 0.f);
  for (std::int64_t q = 0; q < nn.queries; ++q) {
    // pointnet2: w_j = 1 / (d_j + 1e-8), normalised; the order of the sum is fixed (j = 0, 1, 2).
    float w[3] = {0.f, 0.f, 0.f}, sum = 0.f;
    for (int j = 0; j < 3; ++j) {
      if (nn.indices[3 * q + j] < 0) continue;
      w[j] = 1.f / (nn.distances[3 * q + j] + 1e-8f);
      sum += w[j];
    }
    for (int j = 0; j < 3; ++j) out.weights[3 * q + j] = w[j] / sum;
  }
  return out;
}

void NeighborEngine::knn_device_async(PointsView<const float> points, PointsView<const float> queries,
                                      const KnnParams& params, std::int32_t* indices, float* distances,
                                      std::int32_t* counts, StreamHandle stream) {
  S3D_EXPECTS(impl_->device_.is_cuda(), "NeighborEngine::knn_device_async needs a CUDA engine");
  SearchRequest r = knn_request(points, queries, params);
  r.indices = indices;
  r.distances = distances;
  r.counts = counts;
  impl_->run_device_async(r, stream);
}

void NeighborEngine::ball_query_device_async(PointsView<const float> points, PointsView<const float> queries,
                                             const BallQueryParams& params, std::int32_t* indices, float* distances,
                                             std::int32_t* counts, StreamHandle stream) {
  S3D_EXPECTS(impl_->device_.is_cuda(), "NeighborEngine::ball_query_device_async needs a CUDA engine");
  SearchRequest r = ball_request(points, queries, params);
  r.indices = indices;
  r.distances = distances;
  r.counts = counts;
  impl_->run_device_async(r, stream);
}

std::vector<double> interpolate(const Interpolation& weights, const double* values, int channels) {
  S3D_EXPECTS(channels >= 1, "interpolate: channels must be >= 1, got " + std::to_string(channels));
  std::vector<double> out(static_cast<std::size_t>(weights.queries) * channels, 0.0);
  for (std::int64_t q = 0; q < weights.queries; ++q)
    for (int j = 0; j < 3; ++j) {
      const std::int32_t i = weights.indices[3 * q + j];
      if (i < 0) continue;
      const double w = weights.weights[3 * q + j];
      for (int c = 0; c < channels; ++c)
        out[q * channels + c] += w * values[static_cast<std::int64_t>(i) * channels + c];
    }
  return out;
}

}  // namespace s3d::points
