#pragma once
// Internal: marching cubes and the surface cloud of the sparse volume, per block, written once for the CPU
// backend and the CUDA kernels. These are tsdf_math.hpp's cube_case, edge_mask, voxel_gradient, edge_vertex,
// edge_color and cloud_mask with the same expressions in the same order, reading voxels through a block's
// neighbourhood (a voxel of a block that is not allocated reads tsdf 0, weight 0) and without the dense
// volume's border rules, so away from a dense volume's border both give the same vertices bit for bit.
// Order (the CPU and CUDA backends, and any slot assignment, give the same output): blocks sorted by key
// ((z, y, x)); inside a block voxels x fastest, then y, then z; a voxel's vertices by axis; a block's
// triangles by cube (the cube of corner 0 at the voxel) then table order. Vertex ids: an exclusive scan of
// the voxels' vertex counts in that order. `order[slot]` is the sorted position of the block in pool slot
// `slot`; per-voxel arrays (masks, offsets) are indexed by order * 512 + local_index.
#include <cstdint>

#include "sparse_volume_hash.hpp"
#include "tsdf_math.hpp"
#include "volume_common.hpp"

namespace s3d::fusion::detail {

/// Local voxel coordinates of voxel `local` (0..511) of a block.
struct LocalVoxel {
  int x, y, z;
};
S3D_HOST_DEVICE S3D_FORCEINLINE LocalVoxel local_voxel(int local) { return {local & 7, (local >> 3) & 7, local >> 6}; }

/// cube_case of the cube whose corner 0 is local voxel (x, y, z).
S3D_HOST_DEVICE S3D_FORCEINLINE int sparse_cube_case(const BlockNeighbourhood& nb, const Voxel* vol, int x, int y,
                                                     int z) {
  int cube = 0;
  for (int c = 0; c < 8; ++c) {
    const Voxel v = nb.at(vol, x + corner_dx(c), y + corner_dy(c), z + corner_dz(c));
    if (v.weight == 0) return 0;
    if (v.tsdf < 0) cube |= 1 << c;
  }
  return cube;
}

/// edge_mask of local voxel (x, y, z): its +x, +y, +z edges that change sign and belong to a cube of
/// non-trivial case (the four cubes sharing the edge, recomputed here).
S3D_HOST_DEVICE S3D_FORCEINLINE int sparse_edge_mask(const BlockNeighbourhood& nb, const Voxel* vol, int x, int y,
                                                     int z) {
  const Voxel v = nb.at(vol, x, y, z);
  if (v.weight == 0) return 0;
  const bool inside = v.tsdf < 0;
  int mask = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const Voxel w = nb.at(vol, x + (axis == 0), y + (axis == 1), z + (axis == 2));
    if (w.weight == 0 || (w.tsdf < 0) == inside) continue;
    const int a1 = axis == 0 ? 1 : 0, a2 = axis == 2 ? 1 : 2;
    bool used = false;
    for (int s = 0; s < 4 && !used; ++s) {
      int q[3] = {x, y, z};
      q[a1] -= s & 1;
      q[a2] -= s >> 1;
      used = sparse_cube_case(nb, vol, q[0], q[1], q[2]) != 0;
    }
    if (used) mask |= 1 << axis;
  }
  return mask;
}

/// voxel_gradient at local voxel (x, y, z): central differences of the stored tsdf over the voxel size.
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f sparse_voxel_gradient(const BlockNeighbourhood& nb, const Voxel* vol, float voxel,
                                                            int x, int y, int z) {
  const float dx = static_cast<float>(nb.at(vol, x + 1, y, z).tsdf) - static_cast<float>(nb.at(vol, x - 1, y, z).tsdf);
  const float dy = static_cast<float>(nb.at(vol, x, y + 1, z).tsdf) - static_cast<float>(nb.at(vol, x, y - 1, z).tsdf);
  const float dz = static_cast<float>(nb.at(vol, x, y, z + 1).tsdf) - static_cast<float>(nb.at(vol, x, y, z - 1).tsdf);
  return {dx / voxel, dy / voxel, dz / voxel};
}

/// edge_vertex on local voxel (x, y, z)'s edge along `axis` (signs differ); its colour too when `colors` is set.
S3D_HOST_DEVICE S3D_FORCEINLINE void sparse_edge_vertex(const BlockNeighbourhood& nb, const Voxel* vol,
                                                        const ColorVoxel* colors, const SparseGrid& g, int x, int y,
                                                        int z, int axis, Vec3f& position, Vec3f& normal,
                                                        std::uint8_t* rgb) {
  const int x1 = x + (axis == 0), y1 = y + (axis == 1), z1 = z + (axis == 2);
  const long long v0 = nb.index(x, y, z), v1 = nb.index(x1, y1, z1);
  const float f0 = static_cast<float>(vol[v0].tsdf);
  const float f1 = static_cast<float>(vol[v1].tsdf);
  const float t = f0 / (f0 - f1);
  const Vec3f p0 = g.lattice.centre(nb.gi(x), nb.gj(y), nb.gk(z)),
              p1 = g.lattice.centre(nb.gi(x1), nb.gj(y1), nb.gk(z1));
  position = p0 + (t * (p1 - p0));
  const Vec3f n0 = sparse_voxel_gradient(nb, vol, g.voxel, x, y, z);
  const Vec3f n1 = sparse_voxel_gradient(nb, vol, g.voxel, x1, y1, z1);
  const Vec3f n = n0 + (t * (n1 - n0));
  const float len = sqrtf(squared_norm(n));
  normal = len > 0.0f ? Vec3f{n.x / len, n.y / len, n.z / len} : Vec3f{0.0f, 0.0f, 0.0f};
  if (colors == nullptr) return;
  // edge_color
  const ColorVoxel c0 = colors[v0], c1 = colors[v1];
  if (c0.weight == 0 || c1.weight == 0) {
    const ColorVoxel c = c0.weight != 0 ? c0 : c1.weight != 0 ? c1 : ColorVoxel{0, 0, 0, 0};
    rgb[0] = c.r;
    rgb[1] = c.g;
    rgb[2] = c.b;
    return;
  }
  const float a[3] = {static_cast<float>(c0.r), static_cast<float>(c0.g), static_cast<float>(c0.b)};
  const float b[3] = {static_cast<float>(c1.r), static_cast<float>(c1.g), static_cast<float>(c1.b)};
  for (int ch = 0; ch < 3; ++ch)
    rgb[ch] = static_cast<std::uint8_t>(static_cast<int>(rintf(a[ch] + (t * (b[ch] - a[ch])))));
}

/// cloud_mask of local voxel (x, y, z) (KinFu fetchCloud: both ends observed, neither +1, strictly opposite signs).
S3D_HOST_DEVICE S3D_FORCEINLINE int sparse_cloud_mask(const BlockNeighbourhood& nb, const Voxel* vol, int x, int y,
                                                      int z) {
  const Voxel v = nb.at(vol, x, y, z);
  if (v.weight == 0 || v.tsdf == 32767 || v.tsdf == 0) return 0;
  int mask = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const Voxel w = nb.at(vol, x + (axis == 0), y + (axis == 1), z + (axis == 2));
    if (w.weight != 0 && w.tsdf != 32767 && ((v.tsdf > 0 && w.tsdf < 0) || (v.tsdf < 0 && w.tsdf > 0)))
      mask |= 1 << axis;
  }
  return mask;
}

/// The vertices of local voxel (x, y, z) that `mask` selects, from index `out` on (mesh and cloud alike).
S3D_HOST_DEVICE S3D_FORCEINLINE void sparse_write_vertices(const BlockNeighbourhood& nb, const Voxel* vol,
                                                           const ColorVoxel* colors, const SparseGrid& g, int x, int y,
                                                           int z, int mask, long long out, float* pos, float* nor,
                                                           std::uint8_t* rgb) {
  for (int axis = 0; axis < 3; ++axis) {
    if (!(mask & (1 << axis))) continue;
    Vec3f p, n;
    sparse_edge_vertex(nb, vol, colors, g, x, y, z, axis, p, n, colors ? rgb + 3 * out : nullptr);
    store3(pos, out, p);
    store3(nor, out, n);
    ++out;
  }
}

/// emit_cube_triangles for the cube of corner 0 at local voxel (x, y, z): each edge becomes its owner voxel's
/// vertex, offsets[order(owner's block) * 512 + local] + rank among the owner's mask bits (the caller has checked
/// that the mesh fits int32 ids). Every corner of a cube with triangles is observed, so every owner's block is
/// allocated.
S3D_HOST_DEVICE S3D_FORCEINLINE void sparse_emit_triangles(const std::int8_t* row, int count,
                                                           const BlockNeighbourhood& nb, const int* order,
                                                           const std::uint8_t* masks, const std::int64_t* offsets,
                                                           int x, int y, int z, std::int32_t* out) {
  for (int t = 0; t < count; ++t) {
    std::int32_t id[3];
    for (int c = 0; c < 3; ++c) {
      const int e = cube_edge(row[3 * t + c]);
      const int ox = x + (e & 1), oy = y + ((e >> 1) & 1), oz = z + ((e >> 2) & 1);
      const long long v =
          static_cast<long long>(order[nb.slot_of(ox, oy, oz)]) * kBlockVoxels + local_index(ox & 7, oy & 7, oz & 7);
      id[c] = static_cast<std::int32_t>(offsets[v] + mask_rank(masks[v], e >> 3));
    }
    out[3 * t] = id[0];
    out[3 * t + 1] = kMcReverseWinding ? id[2] : id[1];
    out[3 * t + 2] = kMcReverseWinding ? id[1] : id[2];
  }
}

}  // namespace s3d::fusion::detail
