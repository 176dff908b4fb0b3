#pragma once
// The per-point and per-voxel math of VoxelEngine, shared by voxels_cpu.cpp and voxels_cuda.cu (S3D_HOST_DEVICE;
// the whole build has FMA contraction off, -ffp-contract=off / --fmad=false), so that both backends assign every
// point to the same cell and aggregate every voxel to the same bits.
#include <cmath>
#include <cstdint>

#include "s3d/core/host_device.hpp"

namespace s3d::points::detail {

enum : int { kVoxelWorld = 0, kVoxelMinBound = 1, kVoxelRange = 2 };
enum : int { kAggregateMean = 0, kAggregateFirst = 1, kAggregateNearest = 2 };

/// A validated grid, planned on the host (voxels.cpp) and passed by value to the kernels. Axes are x, y, z.
struct VoxelGrid {
  int origin = kVoxelWorld;
  float size[3];        // voxel edge (fp32, as given)
  float inv_size[3];    // kWorld: 1.0f / size, in fp32 as PCL's inverse_leaf_size_
  double min_bound[3];  // kMinBound: Open3D's voxel_min_bound = min_bound - size / 2 (fp64)
  float range_lo[3];    // kRange: the box [lo, hi)
  float range_hi[3];
  long long offset[3];          // kWorld: the smallest occupied cell (subtracted)
  long long dims[3];            // cells along x, y, z
  long long batches;            // B
  double corner[3];             // world position of cell (0, 0, 0)'s corner (Voxels.origin)
  unsigned long long sentinel;  // B * Z * Y * X: the key of a dropped point (sorts after every voxel)
};

/// kWorld's absolute cell on one axis, exactly PCL VoxelGrid's floor(p * inverse_leaf) in fp32.
S3D_HOST_DEVICE inline float world_cell(float p, float inv) { return floorf(p * inv); }

/// kMinBound's cell on one axis, exactly Open3D legacy voxel_down_sample's floor((p - voxel_min_bound) / v).
S3D_HOST_DEVICE inline double min_bound_cell(float p, double voxel_min_bound, float size) {
  return floor((static_cast<double>(p) - voxel_min_bound) / static_cast<double>(size));
}

/// kRange's cell on one axis: spconv's floor((p - range_min) / v) in fp32.
S3D_HOST_DEVICE inline float range_cell(float p, float lo, float size) { return floorf((p - lo) / size); }

/// The linear key ((b * Z + z) * Y + y) * X + x of point (x, y, z) in batch b, or g.sentinel when the point
/// lies outside the grid (kRange: outside [lo, hi) or its cell outside the shape).
S3D_HOST_DEVICE inline unsigned long long voxel_key(const VoxelGrid& g, float x, float y, float z, long long b) {
  const float p[3] = {x, y, z};
  long long c[3];
  for (int a = 0; a < 3; ++a) {
    if (g.origin == kVoxelWorld) {
      c[a] = static_cast<long long>(world_cell(p[a], g.inv_size[a])) - g.offset[a];
    } else if (g.origin == kVoxelMinBound) {
      c[a] = static_cast<long long>(min_bound_cell(p[a], g.min_bound[a], g.size[a]));
    } else {
      if (!(p[a] >= g.range_lo[a] && p[a] < g.range_hi[a])) return g.sentinel;
      const float f = range_cell(p[a], g.range_lo[a], g.size[a]);
      if (!(f >= 0.f && static_cast<double>(f) < static_cast<double>(g.dims[a]))) return g.sentinel;
      c[a] = static_cast<long long>(f);
    }
    if (c[a] < 0 || c[a] >= g.dims[a]) return g.sentinel;
  }
  return static_cast<unsigned long long>(((b * g.dims[2] + c[2]) * g.dims[1] + c[1]) * g.dims[0] + c[0]);
}

/// (batch, z, y, x) of a key.
S3D_HOST_DEVICE inline void voxel_coords(const VoxelGrid& g, unsigned long long key, std::int32_t out[4]) {
  const unsigned long long x = key % static_cast<unsigned long long>(g.dims[0]);
  key /= static_cast<unsigned long long>(g.dims[0]);
  const unsigned long long y = key % static_cast<unsigned long long>(g.dims[1]);
  key /= static_cast<unsigned long long>(g.dims[1]);
  const unsigned long long z = key % static_cast<unsigned long long>(g.dims[2]);
  out[0] = static_cast<std::int32_t>(key / static_cast<unsigned long long>(g.dims[2]));
  out[1] = static_cast<std::int32_t>(z);
  out[2] = static_cast<std::int32_t>(y);
  out[3] = static_cast<std::int32_t>(x);
}

/// Aggregates one voxel: `members` are its kept points' input indices in increasing order. Writes the
/// aggregated xyz and the representative (kMean and kFirst: the first member; kNearest: the member nearest to
/// the cell centre corner + (c + 0.5) * v in fp64, ties to the smaller index). The mean sums in fp64 in member
/// order and rounds once to fp32.
S3D_HOST_DEVICE inline void aggregate_voxel(const VoxelGrid& g, unsigned long long key, const std::int32_t* members,
                                            int count, const float* xyz, int aggregate, float out[3],
                                            std::int32_t* representative) {
  std::int32_t rep = members[0];
  if (aggregate == kAggregateMean) {
    double sum[3] = {0.0, 0.0, 0.0};
    for (int j = 0; j < count; ++j) {
      const float* p = xyz + 3 * static_cast<long long>(members[j]);
      for (int a = 0; a < 3; ++a) sum[a] += static_cast<double>(p[a]);
    }
    for (int a = 0; a < 3; ++a) out[a] = static_cast<float>(sum[a] / static_cast<double>(count));
    *representative = rep;
    return;
  }
  if (aggregate == kAggregateNearest) {
    std::int32_t c[4];
    voxel_coords(g, key, c);
    const double cell[3] = {static_cast<double>(c[3]), static_cast<double>(c[2]), static_cast<double>(c[1])};
    double centre[3];
    for (int a = 0; a < 3; ++a) centre[a] = g.corner[a] + (cell[a] + 0.5) * static_cast<double>(g.size[a]);
    double best = 0.0;
    for (int j = 0; j < count; ++j) {
      const float* p = xyz + 3 * static_cast<long long>(members[j]);
      const double dx = static_cast<double>(p[0]) - centre[0], dy = static_cast<double>(p[1]) - centre[1],
                   dz = static_cast<double>(p[2]) - centre[2];
      const double d2 = ((dx * dx) + (dy * dy)) + (dz * dz);
      if (j == 0 || d2 < best) best = d2, rep = members[j];  // members ascend: strict < keeps the smaller index
    }
  }
  const float* p = xyz + 3 * static_cast<long long>(rep);
  for (int a = 0; a < 3; ++a) out[a] = p[a];
  *representative = rep;
}

}  // namespace s3d::points::detail
