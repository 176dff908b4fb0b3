// VoxelEngine: validation, the grid every backend uses (planned here, on the host, from the cloud's bounds),
// and the one place that chooses a backend.
#include "s3d/points/voxels.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/select_backend.hpp"
#include "voxels_impl.hpp"

namespace s3d::points {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

constexpr const char* kAxis[3] = {"x", "y", "z"};
constexpr double kMaxCell = 4611686018427387904.0;  // 2^62: cell numbers beyond this do not fit the keys
constexpr long long kMaxAxis = 2147483647;          // coordinates are int32

long long cells_along(double cells, int axis) {
  if (!(cells >= 1.0 && cells <= static_cast<double>(kMaxAxis)))
    throw DataError(std::string("voxelize: the grid has ") + num(cells) + " cells along " + kAxis[axis] +
                    " (at most 2^31 - 1)");
  return static_cast<long long>(cells);
}

VoxelRequest request_of(PointsView<const float> points, const std::int32_t* batch, const detail::VoxelGrid& grid,
                        const VoxelizeParams& params) {
  VoxelRequest request;
  request.points = points;
  request.batch = batch;
  request.grid = grid;
  request.max_points_per_voxel = params.max_points_per_voxel;
  request.max_voxels = params.max_voxels;
  request.min_points_per_voxel = params.min_points_per_voxel;
  request.aggregate = params.aggregate == VoxelAggregate::kMean    ? detail::kAggregateMean
                      : params.aggregate == VoxelAggregate::kFirst ? detail::kAggregateFirst
                                                                   : detail::kAggregateNearest;
  return request;
}

/// The grid of `params` over a cloud with bounds [lo, hi] and `batches` batch ids.
detail::VoxelGrid plan_grid(const VoxelizeParams& params, const float lo[3], const float hi[3], long long batches) {
  detail::VoxelGrid g{};
  g.batches = batches;
  for (int a = 0; a < 3; ++a) {
    const float v = params.voxel_size[a];
    g.size[a] = v;
    g.inv_size[a] = 1.0f / v;
    switch (params.origin) {
      case VoxelOrigin::kWorld: {
        g.origin = detail::kVoxelWorld;
        const double first = detail::world_cell(lo[a], g.inv_size[a]), last = detail::world_cell(hi[a], g.inv_size[a]);
        if (!(std::fabs(first) < kMaxCell && std::fabs(last) < kMaxCell))
          throw DataError(std::string("voxelize: a point's cell along ") + kAxis[a] + " is beyond 2^62 (voxel size " +
                          num(v) + ")");
        g.offset[a] = static_cast<long long>(first);
        g.dims[a] = cells_along(last - first + 1.0, a);
        g.corner[a] = static_cast<double>(g.offset[a]) * static_cast<double>(v);
        break;
      }
      case VoxelOrigin::kMinBound: {
        g.origin = detail::kVoxelMinBound;
        g.min_bound[a] = static_cast<double>(lo[a]) - static_cast<double>(v) * 0.5;
        g.dims[a] = cells_along(detail::min_bound_cell(hi[a], g.min_bound[a], v) + 1.0, a);
        g.corner[a] = g.min_bound[a];
        break;
      }
      case VoxelOrigin::kRange: {
        g.origin = detail::kVoxelRange;
        g.range_lo[a] = params.range[a];
        g.range_hi[a] = params.range[3 + a];
        g.dims[a] = cells_along(std::round((static_cast<double>(params.range[3 + a]) - params.range[a]) / v), a);
        g.corner[a] = params.range[a];
        break;
      }
    }
  }
  const long double total = static_cast<long double>(batches) * g.dims[0] * g.dims[1] * g.dims[2];
  if (total > static_cast<long double>(kMaxCell))
    throw DataError("voxelize: the grid has " + num(static_cast<double>(total)) +
                    " cells (batches x Z x Y x X), more than 2^62");
  g.sentinel = static_cast<unsigned long long>(batches) * g.dims[0] * g.dims[1] * g.dims[2];
  return g;
}

}  // namespace

void VoxelizeParams::validate() const {
  for (int a = 0; a < 3; ++a) {
    const float v = voxel_size[a];
    S3D_EXPECTS(std::isfinite(v) && v > 0.f && std::isfinite(1.0f / v),
                std::string("VoxelizeParams.voxel_size.") + kAxis[a] + " must be finite and > 0, got " + num(v));
  }
  S3D_EXPECTS(origin == VoxelOrigin::kWorld || origin == VoxelOrigin::kMinBound || origin == VoxelOrigin::kRange,
              "VoxelizeParams.origin is not a VoxelOrigin");
  if (origin == VoxelOrigin::kRange) {
    for (int a = 0; a < 3; ++a) {
      const float lo = range[a], hi = range[3 + a];
      S3D_EXPECTS(std::isfinite(lo) && std::isfinite(hi) && lo < hi,
                  std::string("VoxelizeParams.range along ") + kAxis[a] + " must be finite with min < max, got [" +
                      num(lo) + ", " + num(hi) + ")");
      const double cells = std::round((static_cast<double>(hi) - lo) / voxel_size[a]);
      S3D_EXPECTS(cells >= 1.0, std::string("VoxelizeParams.range along ") + kAxis[a] +
                                    " is less than half a voxel: round((max - min) / v) = 0");
    }
  }
  S3D_EXPECTS(max_points_per_voxel >= 0,
              "VoxelizeParams.max_points_per_voxel must be >= 0, got " + std::to_string(max_points_per_voxel));
  S3D_EXPECTS(max_voxels >= 0, "VoxelizeParams.max_voxels must be >= 0, got " + std::to_string(max_voxels));
  S3D_EXPECTS(min_points_per_voxel >= 1,
              "VoxelizeParams.min_points_per_voxel must be >= 1, got " + std::to_string(min_points_per_voxel));
  S3D_EXPECTS(aggregate == VoxelAggregate::kMean || aggregate == VoxelAggregate::kFirst ||
                  aggregate == VoxelAggregate::kNearestCenter,
              "VoxelizeParams.aggregate is not a VoxelAggregate");
}

VoxelEngine::VoxelEngine(const Device& device) {
  impl_ = select_backend<VoxelEngine::Impl>(
      device, "VoxelEngine", [&](const Device& d) { return detail::make_cpu_voxels(d); },
      S3D_CUDA_FACTORY([&](const Device& d) { return detail::make_cuda_voxels(d); }));
}

VoxelEngine::~VoxelEngine() = default;
VoxelEngine::VoxelEngine(VoxelEngine&&) noexcept = default;
VoxelEngine& VoxelEngine::operator=(VoxelEngine&&) noexcept = default;

const Device& VoxelEngine::device() const { return impl_->device_; }

Voxels VoxelEngine::voxelize(PointsView<const float> points, const std::int32_t* batch, const VoxelizeParams& params) {
  params.validate();
  const std::size_t n = points.size;
  S3D_EXPECTS(n == 0 || points.xyz != nullptr, "voxelize: null coordinates");
  S3D_EXPECTS(n < (std::size_t{1} << 31), "voxelize: more than 2^31 - 1 points");
  float lo[3] = {0.f, 0.f, 0.f}, hi[3] = {0.f, 0.f, 0.f};
  for (std::size_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) {
      const float v = points.xyz[3 * i + a];
      if (!std::isfinite(v))
        throw DataError("voxelize: point " + std::to_string(i) + " has a non-finite coordinate (" + num(v) + ")");
      if (i == 0 || v < lo[a]) lo[a] = v;
      if (i == 0 || v > hi[a]) hi[a] = v;
    }
  long long batches = 1;
  if (batch != nullptr)
    for (std::size_t i = 0; i < n; ++i) {
      S3D_EXPECTS(batch[i] >= 0, "voxelize: point " + std::to_string(i) + " has a negative batch id (" +
                                     std::to_string(batch[i]) + ")");
      if (batch[i] + 1LL > batches) batches = batch[i] + 1LL;
    }

  Voxels out;
  if (n == 0 && params.origin != VoxelOrigin::kRange) return out;  // no bounds: an empty 0 x 0 x 0 grid
  const detail::VoxelGrid grid = plan_grid(params, lo, hi, batches);
  out.shape = {grid.dims[2], grid.dims[1], grid.dims[0]};
  out.origin = {grid.corner[0], grid.corner[1], grid.corner[2]};
  if (n == 0) return out;
  impl_->run_host(request_of(points, batch, grid, params), out);
  return out;
}

DeviceVoxels VoxelEngine::voxelize_device(PointsView<const float> points, const std::int32_t* batch,
                                          const VoxelizeParams& params) {
  params.validate();
  S3D_EXPECTS(!impl_->device_.is_cpu(), "VoxelEngine::voxelize_device needs a CUDA engine");
  const std::size_t n = points.size;
  S3D_EXPECTS(n == 0 || points.xyz != nullptr, "voxelize_device: null coordinates");
  S3D_EXPECTS(n < (std::size_t{1} << 31), "voxelize_device: more than 2^31 - 1 points");
  float lo[3] = {0.f, 0.f, 0.f}, hi[3] = {0.f, 0.f, 0.f};
  long long batches = 1;
  if (n > 0 && (params.origin != VoxelOrigin::kRange || batch != nullptr)) {
    const CloudSummary s = impl_->summarize_device(points, batch);
    if (params.origin != VoxelOrigin::kRange && s.first_non_finite >= 0)
      throw DataError("voxelize_device: point " + std::to_string(s.first_non_finite) + " has a non-finite coordinate");
    S3D_EXPECTS(s.first_negative_batch < 0,
                "voxelize_device: point " + std::to_string(s.first_negative_batch) + " has a negative batch id");
    for (int a = 0; a < 3; ++a) {
      lo[a] = s.lo[a];
      hi[a] = s.hi[a];
    }
    batches = s.max_batch + 1LL;
  }
  DeviceVoxels out;
  if (n == 0 && params.origin != VoxelOrigin::kRange) return out;  // no bounds: an empty 0 x 0 x 0 grid
  const detail::VoxelGrid grid = plan_grid(params, lo, hi, batches);
  out.shape = {grid.dims[2], grid.dims[1], grid.dims[0]};
  out.origin = {grid.corner[0], grid.corner[1], grid.corner[2]};
  if (n == 0) return out;
  DeviceVoxels got = impl_->run_device(request_of(points, batch, grid, params));
  got.shape = out.shape;
  got.origin = out.origin;
  return got;
}

DeviceVoxels VoxelEngine::voxelize_device(PointsView<const float> points, const VoxelizeParams& params) {
  return voxelize_device(points, nullptr, params);
}

std::vector<double> aggregate_attribute(const Voxels& voxels, VoxelAggregate aggregate, const double* values,
                                        int channels) {
  S3D_EXPECTS(channels >= 1, "aggregate_attribute: channels must be >= 1, got " + std::to_string(channels));
  const std::size_t m = static_cast<std::size_t>(voxels.count);
  S3D_EXPECTS(voxels.points_per_voxel.size() == m && voxels.representative.size() == m,
              "aggregate_attribute: the voxels are incomplete");
  std::vector<double> out(m * channels, 0.0);
  if (aggregate != VoxelAggregate::kMean) {
    for (std::size_t v = 0; v < m; ++v)
      for (int c = 0; c < channels; ++c)
        out[v * channels + c] = values[static_cast<std::size_t>(voxels.representative[v]) * channels + c];
    return out;
  }
  // Input order is each voxel's member order, so these sums are the ones voxelize's mean makes.
  for (std::size_t i = 0; i < voxels.point_voxel.size(); ++i) {
    const std::int32_t v = voxels.point_voxel[i];
    if (v < 0) continue;
    for (int c = 0; c < channels; ++c) out[static_cast<std::size_t>(v) * channels + c] += values[i * channels + c];
  }
  for (std::size_t v = 0; v < m; ++v)
    for (int c = 0; c < channels; ++c) out[v * channels + c] /= static_cast<double>(voxels.points_per_voxel[v]);
  return out;
}

}  // namespace s3d::points
