#pragma once
// Internal: the backend side of VoxelEngine. voxels.cpp validates, plans the grid and dispatches;
// voxels_cpu.cpp and voxels_cuda.cu implement it. No CUDA types here.
#include <cstdint>
#include <memory>

#include "s3d/core/device.hpp"
#include "s3d/points/voxels.hpp"
#include "voxel_math.hpp"

namespace s3d::points {

/// One validated voxelisation: n >= 1 points (host memory for run_host, finite; device memory for run_device,
/// where a range grid drops the non-finite ones), batch ids (or null) inside the grid.
struct VoxelRequest {
  PointsView<const float> points;
  const std::int32_t* batch = nullptr;
  detail::VoxelGrid grid{};
  int max_points_per_voxel = 0;  // 0 = unlimited
  std::int64_t max_voxels = 0;   // 0 = unlimited
  int min_points_per_voxel = 1;
  int aggregate = detail::kAggregateMean;
};

/// What the world and min-bound grids and the batch count need to know of device-memory points, from one pass
/// over them: the bounds of the finite coordinates (lo > hi on an axis without one), the first point with a
/// non-finite coordinate and the first with a negative batch id (-1: none), the largest batch id (0 without ids).
struct CloudSummary {
  float lo[3], hi[3];
  long long first_non_finite = -1;
  long long first_negative_batch = -1;
  int max_batch = 0;
};

class VoxelEngine::Impl {
 public:
  explicit Impl(const Device& device) : device_(device) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Fills count, coords, point_voxel, points_per_voxel, representative, xyz and the three drop counters of
  /// `out` (shape and origin are the caller's). Synchronous.
  virtual void run_host(const VoxelRequest& request, Voxels& out) = 0;
  /// The same on device-memory points; the outputs stay in the engine's buffers. CUDA only.
  virtual DeviceVoxels run_device(const VoxelRequest& request) = 0;
  /// CloudSummary of n >= 1 device-memory points (`batch`: null or n ids). Synchronous. CUDA only.
  virtual CloudSummary summarize_device(PointsView<const float> points, const std::int32_t* batch) = 0;

  Device device_;
};

namespace detail {
std::unique_ptr<VoxelEngine::Impl> make_cpu_voxels(const Device& device);
/// Defined only when CUDA is built. @throws DeviceUnavailable, CudaError.
std::unique_ptr<VoxelEngine::Impl> make_cuda_voxels(const Device& device);
}  // namespace detail

}  // namespace s3d::points
