#pragma once
// Internal: what both volume backends do the same way on the host (argument set-up, validation) and the
// marching cubes triangle emission (S3D_HOST_DEVICE), so that the CPU loops and the CUDA kernels index the
// same vertices in the same order.
#include <cmath>
#include <cstdint>

#include "s3d/core/errors.hpp"
#include "s3d/core/views.hpp"
#include "s3d/fusion/params.hpp"
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

/// Throws InvalidArgument naming the field of `p` that a volume cannot be built with.
void validate_volume(const VolumeParams& p);

/// The integration arguments: world_to_camera = inverse_rigid(camera_to_world) (double, rounded once), the
/// camera centre, the intrinsics and the depth size. Compiled once (volume_common.cpp, g++ with
/// -ffp-contract=off) and called by both backends, so they get the same floats.
IntegrateArgs make_integrate_args(const VolumeGrid& g, ImageView<const float> depth, const CameraIntrinsics& camera,
                                  const Rigid& camera_to_world);

RaycastArgs make_raycast_args(const VolumeGrid& g, const CameraIntrinsics& camera, const Rigid& camera_to_world,
                              int width, int height);

S3D_HOST_DEVICE S3D_FORCEINLINE void store3(float* out, long long index, Vec3f v) {
  out[3 * index] = v.x;
  out[3 * index + 1] = v.y;
  out[3 * index + 2] = v.z;
}

/// Bourke's table lists a triangle's edges clockwise seen from the side where tsdf >= 0 (outside, free space),
/// so the mesh writes them as (0, 2, 1): counter-clockwise seen from outside (Mesh's contract).
constexpr bool kMcReverseWinding = true;

/// Writes the `count` triangles of cube (i, j, k) whose table row is `row` into `out` (3 * count ids): each edge
/// becomes its owner voxel's vertex id, vertex_offset[owner] + its rank among the owner's edge_mask bits.
S3D_HOST_DEVICE S3D_FORCEINLINE void emit_cube_triangles(const std::int8_t* row, int count, const VolumeGrid& g, int i,
                                                         int j, int k, const std::uint8_t* masks,
                                                         const std::int32_t* vertex_offset, std::int32_t* out) {
  for (int t = 0; t < count; ++t) {
    std::int32_t id[3];
    for (int c = 0; c < 3; ++c) {
      const int e = cube_edge(row[3 * t + c]);
      const long long owner = g.index(i + (e & 1), j + ((e >> 1) & 1), k + ((e >> 2) & 1));
      id[c] = vertex_offset[owner] + mask_rank(masks[owner], e >> 3);
    }
    out[3 * t] = id[0];
    out[3 * t + 1] = kMcReverseWinding ? id[2] : id[1];
    out[3 * t + 2] = kMcReverseWinding ? id[1] : id[2];
  }
}

}  // namespace s3d::fusion::detail
