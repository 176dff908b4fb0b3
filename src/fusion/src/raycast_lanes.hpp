#pragma once
// The CPU ray cast, 8 rays at a time (AVX2).
#include "raycast_skipping.hpp"
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

/// raycast_pixel for every pixel of an a.width x a.height map, the marches of 8 neighbouring pixels stepping
/// together (AVX2, one gather a step); the same samples, decisions and bits as raycast_pixel. With `bricks`
/// (whose marks cover `vol`'s negative voxels), each lane first counts off its samples in unmarked bricks
/// without reading them. False (and nothing written) where the CPU lacks AVX2, S3D_CPU_ISA forbids it, or the
/// grid has 2^31 voxels or more.
bool raycast_lanes_cpu(const Voxel* vol, const BrickMap* bricks, const RaycastArgs& a, Vec3f* vertices, Vec3f* normals);

}  // namespace s3d::fusion::detail
