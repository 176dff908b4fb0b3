#pragma once
// Voxelisation and voxel-grid downsampling, on the CPU and on CUDA with identical results. docs/PC-SAMPLE.md
// states the semantics; in short:
//  - Cell of a point, per axis, by the grid origin convention:
//      kWorld     (PCL VoxelGrid):          floor(p * (1 / v)) in fp32, shifted so that the smallest cell is 0;
//      kMinBound  (Open3D voxel_down_sample): floor((p - (min_bound - v / 2)) / v) in fp64;
//      kRange     (spconv / OpenPCDet):     floor((p - range_min) / v) in fp32, points outside the range dropped.
//  - Which points and voxels are kept: the first max_points_per_voxel points of a voxel by input index; the
//    first max_voxels voxels by the input index of their first point. Output voxels are in sorted linear order
//    of (batch, z, y, x).
//  - Aggregates: mean (fp64 sums in input order, rounded once to fp32), first point, or the point nearest to
//    the voxel centre (ties to the smaller index).
//
// This header needs no CUDA.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/views.hpp"

namespace s3d::points {

/// Where voxel boundaries lie (see the header comment).
enum class VoxelOrigin { kWorld, kMinBound, kRange };

/// What one voxel's coordinates (and attributes) become.
enum class VoxelAggregate { kMean, kFirst, kNearestCenter };

struct VoxelizeParams {
  std::array<float, 3> voxel_size{0.05f, 0.05f, 0.05f};  ///< x, y, z; each > 0 and finite
  VoxelOrigin origin = VoxelOrigin::kWorld;
  /// kRange only: x_min, y_min, z_min, x_max, y_max, z_max; the grid is round((max - min) / v) cells per axis.
  std::array<float, 6> range{0, 0, 0, 0, 0, 0};
  int max_points_per_voxel = 0;  ///< 0 = unlimited
  std::int64_t max_voxels = 0;   ///< 0 = unlimited
  int min_points_per_voxel = 1;  ///< PCL's setMinimumPointsNumberPerVoxel: sparser voxels are dropped
  VoxelAggregate aggregate = VoxelAggregate::kMean;
  /// @throws InvalidArgument naming the field.
  void validate() const;
};

/// The occupied voxels of one cloud (batch 0), or of several when batch ids are given.
struct Voxels {
  std::int64_t count = 0;                      ///< M voxels kept
  std::array<std::int64_t, 3> shape{};         ///< grid cells along z, y, x
  std::array<double, 3> origin{};              ///< world position (x, y, z) of cell (0, 0, 0)'s corner
  std::vector<std::int32_t> coords;            ///< [M, 4] (batch, z, y, x), sorted by linear index
  std::vector<std::int32_t> point_voxel;       ///< [N] voxel of each input point, -1 when the point was dropped
  std::vector<std::int32_t> points_per_voxel;  ///< [M] points aggregated (after max_points_per_voxel)
  std::vector<std::int32_t> representative;    ///< [M] first / nearest-to-centre point (kMean: the first)
  std::vector<float> xyz;                      ///< [M, 3] aggregated coordinates
  std::int64_t dropped_out_of_range = 0;       ///< points outside the range (kRange)
  std::int64_t dropped_over_max_points = 0;    ///< points beyond max_points_per_voxel
  std::int64_t dropped_over_max_voxels = 0;    ///< points of voxels beyond max_voxels or under min_points
};

/// Points aggregated into the kept voxels (the sum of points_per_voxel).
std::int64_t points_kept(const Voxels& voxels);

/// Voxels left in a CUDA engine's device buffers (valid until the engine's next call); counts on the host.
struct DeviceVoxels {
  std::int64_t count = 0;
  std::array<std::int64_t, 3> shape{};  ///< z, y, x
  std::array<double, 3> origin{};
  const std::int32_t* coords = nullptr;            ///< [M, 4] (batch, z, y, x), sorted by linear index
  const std::int32_t* point_voxel = nullptr;       ///< [N]
  const std::int32_t* points_per_voxel = nullptr;  ///< [M]
  const std::int32_t* representative = nullptr;    ///< [M]
  const float* xyz = nullptr;                      ///< [M, 3]
  std::int64_t dropped_out_of_range = 0;           ///< including non-finite points
  std::int64_t dropped_over_max_points = 0;
  std::int64_t dropped_over_max_voxels = 0;
};

/// A voxelisation engine bound to one device; keeps its buffers across calls. Not thread-safe.
class VoxelEngine {
 public:
  /// @throws DeviceUnavailable when `device` is CUDA and none is usable.
  explicit VoxelEngine(const Device& device);
  ~VoxelEngine();
  VoxelEngine(VoxelEngine&&) noexcept;
  VoxelEngine& operator=(VoxelEngine&&) noexcept;

  /// Voxelises `points` (host memory, finite). `batch` (null, or one id >= 0 per point) splits the cloud.
  /// @throws InvalidArgument (params), DataError (a non-finite point, a grid of more than 2^62 cells or more
  /// than 2^31 - 1 cells per axis), CudaError, OutOfMemory.
  Voxels voxelize(PointsView<const float> points, const std::int32_t* batch, const VoxelizeParams& params);

  /// CUDA engines only: `points` and `batch` (null, or one id >= 0 per point) in device memory, any grid. The
  /// same voxels, in the same order, as voxelize. A kRange grid of one cloud is planned from the range alone;
  /// the world and min-bound grids and batch ids take one pass over the points on the GPU first (their bounds,
  /// the largest id) and one more wait for it. A non-finite point falls outside a range grid; under the other
  /// grids it is a DataError, as in voxelize. Synchronous. @throws InvalidArgument (CPU engine, a negative batch
  /// id), DataError, CudaError.
  DeviceVoxels voxelize_device(PointsView<const float> points, const std::int32_t* batch, const VoxelizeParams& params);
  /// voxelize_device of one cloud (no batch ids).
  DeviceVoxels voxelize_device(PointsView<const float> points, const VoxelizeParams& params);

  const Device& device() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Aggregates a per-point attribute (`channels` values per input point, host memory) over `voxels` as the
/// params said: the fp64 mean over the kept points in input order, or the representative point's values.
std::vector<double> aggregate_attribute(const Voxels& voxels, VoxelAggregate aggregate, const double* values,
                                        int channels);

}  // namespace s3d::points
