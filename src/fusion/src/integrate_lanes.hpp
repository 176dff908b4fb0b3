#pragma once
// The CPU integration, 8 voxels at a time (AVX2).
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

/// tsdf_sample and tsdf_fuse for every voxel of the grid whose column_range holds it, 8 neighbouring columns (x)
/// at a time: the same operations in the same order as the scalar loop, so the same bits. Depth only (no
/// colour, no brick marks). False (and nothing written) where the CPU lacks AVX2, S3D_CPU_ISA forbids it, or the
/// grid or the depth image has 2^31 elements or more.
bool integrate_lanes_cpu(Voxel* vol, const IntegrateArgs& a, const float* depth, long long pitch);

}  // namespace s3d::fusion::detail
