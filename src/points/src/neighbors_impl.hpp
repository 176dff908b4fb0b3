#pragma once
// Internal: the backend side of NeighborEngine. neighbors.cpp validates and dispatches; neighbors_cpu.cpp and
// neighbors_cuda.cu implement it. No CUDA types here.
#include <cstdint>
#include <memory>

#include "neighbor_query.hpp"
#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/neighbors.hpp"

namespace s3d::points {

/// One validated search: points, queries (size 0 = the points themselves), and where the rows go ([Q, K]
/// indices and distances, [Q] counts; each may be null).
struct SearchRequest {
  PointsView<const float> points;
  PointsView<const float> queries;
  detail::QuerySpec spec{};
  /// Cells get about this many points (kNN: ~K/3 so that one shell usually suffices).
  float points_per_cell = 2.f;
  /// Ball query: cells at least the radius, so that a query looks at <= 3 cells per axis.
  float min_cell = 0.f;
  std::int32_t* indices = nullptr;
  float* distances = nullptr;
  std::int32_t* counts = nullptr;

  std::int64_t query_count() const { return static_cast<std::int64_t>(queries.size ? queries.size : points.size); }
};

class NeighborEngine::Impl {
 public:
  explicit Impl(const Device& device) : device_(device) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Host-memory request; synchronous.
  virtual void run_host(const SearchRequest& request) = 0;
  /// Device-memory request (CUDA only); ordered on `stream`.
  virtual void run_device_async(const SearchRequest& request, StreamHandle stream) = 0;

  Device device_;
};

namespace detail {
std::unique_ptr<NeighborEngine::Impl> make_cpu_neighbors(const Device& device);
/// Defined only when CUDA is built. @throws DeviceUnavailable, CudaError.
std::unique_ptr<NeighborEngine::Impl> make_cuda_neighbors(const Device& device);
/// Largest number of grid cells for n points.
inline long long max_grid_cells(long long n) {
  const long long cap = 1LL << 24;
  return n * 2 + 1 < cap ? n * 2 + 1 : cap;
}
}  // namespace detail

}  // namespace s3d::points
