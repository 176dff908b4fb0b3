#pragma once
// Internal: the sparse volume's allocation and integration math, written once for the CPU backend and the CUDA
// kernels (same rules as tsdf_math.hpp: a fixed operation order, no FMA contraction, IEEE division and square
// root, so both backends allocate the same blocks and store the same voxels).
// - Allocation: for each valid depth pixel (u, v) with depth d, the ray through the pixel centre, unit direction
//   R ((u - cx) / fx, (v - cy) / fy, 1) / |.|, from the camera centre; along it the segment of ray lengths
//   [D - mu, D + mu] (clamped at 0), mu = truncation_at(d), D = d sqrt(xn^2 + yn^2 + 1) the pixel's ray length
//   (tsdf_sample's), and every block that segment crosses (a 3-D DDA, Amanatides & Woo 1987), at most
//   segment_block_limit() of them.
// - Integration: every voxel of every allocated block whose box may be in the frustum (block_maybe_visible, a
//   conservative cull) takes exactly the dense volume's update (tsdf_sample, tsdf_fuse, color_fuse) at its
//   world-lattice coordinates, so a dense volume with origin 0 and the same voxel size stores the same value.
#include <cmath>
#include <cstdint>

#include "sparse_volume_hash.hpp"
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

struct AllocateArgs {
  SparseGrid grid;
  Rigid camera_to_world;
  float fx, fy, cx, cy;
  int width, height;
  int max_blocks;  ///< segment_block_limit(grid)
};

/// The most blocks a segment of 2 truncations (the largest, truncation_cap) can cross: one plus, per axis,
/// floor(length / block) + 1 boundary crossings (+1 for rounding).
inline int segment_block_limit(const SparseGrid& g) {
  return 4 + 3 * static_cast<int>(
                     std::ceil(2.0 * static_cast<double>(g.lattice.truncation_cap) / static_cast<double>(g.block)));
}

/// Writes the keys of the blocks that pixel (u, v)'s segment crosses, in the order the segment meets them,
/// into out[0 .. n), and returns n (0 for an invalid pixel or a segment whose end lies outside the block
/// coordinate range).
S3D_HOST_DEVICE S3D_FORCEINLINE int segment_blocks(const AllocateArgs& a, const float* depth, long long pitch, int u,
                                                   int v, unsigned long long* out) {
  const float d = depth[static_cast<long long>(v) * pitch + u];
  if (!(d > 0.0f)) return 0;
  const float xn = (static_cast<float>(u) - a.cx) / a.fx;
  const float yn = (static_cast<float>(v) - a.cy) / a.fy;
  const float ray_depth = d * sqrtf(((xn * xn) + (yn * yn)) + 1.0f);
  Vec3f dir = a.camera_to_world.rotate({xn, yn, 1.0f});
  const float len = sqrtf(squared_norm(dir));
  dir = {dir.x / len, dir.y / len, dir.z / len};
  if (dir.x == 0.0f) dir.x = 1e-15f;
  if (dir.y == 0.0f) dir.y = 1e-15f;
  if (dir.z == 0.0f) dir.z = 1e-15f;
  const float mu = truncation_at(a.grid.lattice, d);
  const float s0 = ray_depth - mu > 0.0f ? ray_depth - mu : 0.0f;
  const float length = (ray_depth + mu) - s0;
  const Vec3f camera = {a.camera_to_world.t[0], a.camera_to_world.t[1], a.camera_to_world.t[2]};
  const Vec3f p0 = ray_point(camera, dir, s0), p1 = ray_point(camera, dir, ray_depth + mu);
  const float bs = a.grid.block;
  const float lim = static_cast<float>(kBlockCoordLimit);
  const float f0[3] = {floorf(p0.x / bs), floorf(p0.y / bs), floorf(p0.z / bs)};
  const float f1[3] = {floorf(p1.x / bs), floorf(p1.y / bs), floorf(p1.z / bs)};
  for (int axis = 0; axis < 3; ++axis)
    if (!(f0[axis] >= -lim && f0[axis] < lim && f1[axis] >= -lim && f1[axis] < lim)) return 0;
  const float p[3] = {p0.x, p0.y, p0.z}, dv[3] = {dir.x, dir.y, dir.z};
  int b[3], step[3];
  float next[3], delta[3];  // segment parameter (from s0) of the next boundary per axis, and between boundaries
  for (int axis = 0; axis < 3; ++axis) {
    b[axis] = static_cast<int>(f0[axis]);
    const bool up = dv[axis] > 0.0f;
    step[axis] = up ? 1 : -1;
    next[axis] = (static_cast<float>(up ? b[axis] + 1 : b[axis]) * bs - p[axis]) / dv[axis];
    delta[axis] = bs / (up ? dv[axis] : -dv[axis]);
  }
  int n = 0;
  for (;;) {
    out[n++] = pack_block(b[0], b[1], b[2]);
    if (n == a.max_blocks) break;
    const int axis = next[0] <= next[1] ? (next[0] <= next[2] ? 0 : 2) : (next[1] <= next[2] ? 1 : 2);
    if (!(next[axis] <= length)) break;
    b[axis] += step[axis];
    if (!block_in_range(b[0], b[1], b[2])) break;
    next[axis] = next[axis] + delta[axis];
  }
  return n;
}

/// False only when no voxel of block `b` can pass tsdf_sample's camera and image tests: every corner of the
/// block's box is behind the camera, or every corner lies in front (by at least 4 blocks, where the float
/// projection's error stays well below the margin) and projects more than 3 pixels beyond the same image side
/// (the box's image is the convex hull of its corners'). Double precision, the same on both backends.
S3D_HOST_DEVICE S3D_FORCEINLINE bool block_maybe_visible(const IntegrateArgs& a, const SparseGrid& g, BlockCoord b) {
  const double margin = 3.0;
  const BlockImage im = block_image(a.world_to_camera, g.block, b, 4.0 * g.block, a.fx, a.fy, a.cx, a.cy);
  if (im.all_behind) return false;
  if (!im.all_far) return true;
  return !(im.u_hi < -margin || im.u_lo > (a.width - 1) + margin || im.v_hi < -margin ||
           im.v_lo > (a.height - 1) + margin);
}

/// The dense update of voxel `local` (0..511) of block `b` (IntegrateArgs::grid is SparseGrid::lattice): the
/// voxel and, when `color` is set (a volume with colour and a frame with an image), its colour.
S3D_HOST_DEVICE S3D_FORCEINLINE void integrate_voxel(const IntegrateArgs& a, const float* depth, long long pitch,
                                                     const std::uint8_t* rgb, BlockCoord b, int local, Voxel* voxel,
                                                     ColorVoxel* color) {
  const int i = b.x * kBlockSide + (local & 7), j = b.y * kBlockSide + ((local >> 3) & 7),
            k = b.z * kBlockSide + (local >> 6);
  float tsdf;
  long long pixel;
  if (!tsdf_sample(a, depth, pitch, i, j, k, tsdf, pixel)) return;
  *voxel = tsdf_fuse(*voxel, tsdf, a.grid.max_weight);
  if (color && takes_color(tsdf)) *color = color_fuse(*color, rgb + 3 * pixel, a.grid.max_weight);
}

/// The squared distance, in blocks, from the camera's block to block `key`: the order in which a frame's new
/// blocks take the pool's last free slots (nearest first; ties keep coordinate order).
S3D_HOST_DEVICE S3D_FORCEINLINE unsigned long long block_distance2(unsigned long long key, BlockCoord camera) {
  const BlockCoord b = unpack_block(key);
  const long long dx = static_cast<long long>(b.x) - camera.x, dy = static_cast<long long>(b.y) - camera.y,
                  dz = static_cast<long long>(b.z) - camera.z;
  return static_cast<unsigned long long>(dx * dx + dy * dy + dz * dz);
}

}  // namespace s3d::fusion::detail
