#pragma once
// The CPU integration, 8 voxels at a time (AVX2).
#include "integrate_culling.hpp"
#include "raycast_skipping.hpp"
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

/// tsdf_sample and tsdf_fuse for every voxel of the grid whose column_range holds it, 8 neighbouring columns (x)
/// at a time, and color_fuse from `rgb` (a dense 3-byte image of the depth's size) where `colors` is set: the
/// same operations in the same order as the scalar loop, so the same bits. With `marks`, the bricks of the
/// voxels it stores negative are marked, as the scalar loop marks them. With `culling` (scratch), the blocks the
/// frame cannot change are passed over (IntegrateCulling). False (and nothing written) where the CPU lacks AVX2,
/// S3D_CPU_ISA forbids it, or the grid or the depth image has 2^31 elements or more.
bool integrate_lanes_cpu(Voxel* vol, ColorVoxel* colors, const IntegrateArgs& a, const float* depth, long long pitch,
                         const std::uint8_t* rgb, BrickMap* marks, IntegrateCulling* culling);

/// The same for one block of 8^3 voxels stored x fastest (the sparse volume's, sparse_volume_hash.hpp:
/// local_index), whose first voxel is (i0, j0, k0) of the lattice a.grid: every voxel, 8 along x at a time, the
/// same bits as integrate_voxel on each. `colors` may be null. False (and nothing written) where the CPU lacks
/// AVX2, S3D_CPU_ISA forbids it, or the depth image has 2^31 elements or more.
bool integrate_block_lanes_cpu(Voxel* voxels, ColorVoxel* colors, const IntegrateArgs& a, const float* depth,
                               long long pitch, const std::uint8_t* rgb, int i0, int j0, int k0);

}  // namespace s3d::fusion::detail
