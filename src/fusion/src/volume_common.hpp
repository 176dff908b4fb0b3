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
/// becomes its owner voxel's vertex id, first_vertex + vertex_offset[owner] + its rank among the owner's
/// edge_mask bits (the offsets count from the slab's first vertex, `first_vertex` in the whole mesh).
S3D_HOST_DEVICE S3D_FORCEINLINE void emit_cube_triangles(const std::int8_t* row, int count, const VolumeGrid& g, int i,
                                                         int j, int k, SliceWindow<const std::uint8_t> masks,
                                                         SliceWindow<const std::int32_t> vertex_offset,
                                                         std::int32_t first_vertex, std::int32_t* out) {
  for (int t = 0; t < count; ++t) {
    std::int32_t id[3];
    for (int c = 0; c < 3; ++c) {
      const int e = cube_edge(row[3 * t + c]);
      const long long owner = g.index(i + (e & 1), j + ((e >> 1) & 1), k + ((e >> 2) & 1));
      id[c] = first_vertex + vertex_offset[owner] + mask_rank(masks[owner], e >> 3);
    }
    out[3 * t] = id[0];
    out[3 * t + 1] = kMcReverseWinding ? id[2] : id[1];
    out[3 * t + 2] = kMcReverseWinding ? id[1] : id[2];
  }
}

/// Surface extraction runs over slabs of z slices, so that its per-voxel scratch (cube cases, edge masks,
/// vertex and triangle offsets: 10 bytes a voxel, 1.3 GB at 512^3 for the whole volume) covers one slab.
/// Slab [k0, k1) writes the vertices its voxels own and the triangles of its cubes. Those triangles also name
/// vertices that slice k1 owns, so the slab computes slice k1's edge masks and offsets too (ahead of the next
/// slab, whose first vertex they count from), and the edge masks of slice k0 read the cube cases of slice
/// k0 - 1: cube cases cover slices [case_first, end), edge masks and vertex offsets [k0, end).
struct MeshSlab {
  int k0, k1;
  int case_first;  ///< max(k0 - 1, 0)
  int end;         ///< min(k1 + 1, nz)
};

/// Voxels a slab holds by default (~170 MB of mesh scratch; 64 slices at 512^2).
constexpr long long kSlabVoxels = 1LL << 24;

/// Slices per slab: `requested` when > 0 (tests), else as many as kSlabVoxels allows (at least 1).
int slab_slices(const VolumeGrid& g, int requested);

/// The slab of `slices` slices from slice k0 on (clipped to the grid).
MeshSlab mesh_slab(const VolumeGrid& g, int k0, int slices);

/// Throws InvalidArgument when a mesh of this many vertices and triangles cannot be indexed by int32 ids.
void check_mesh_size(long long vertices, long long triangles);

}  // namespace s3d::fusion::detail
