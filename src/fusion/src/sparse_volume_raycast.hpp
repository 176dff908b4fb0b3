#pragma once
// Internal: the sparse volume's ray cast, written once for the CPU backend and the CUDA kernel (tsdf_math.hpp's
// rules, so both give the same maps bit for bit). It follows the dense ray cast (raycast_pixel) with three
// differences: there is no box, so the march runs from the camera centre (t = 0) to the volume's range; the
// samples sit at t_n = n * step (a product, not a running sum, so that skipped samples cost nothing) and only
// those inside the allocated blocks' box (SparseRaycastArgs) are visited; and a
// sample in a block that is not allocated reads as unobserved (0, neither sign), as do all the samples up to
// that block's exit (or of the larger empty cell around it, sparse_volume_hash.hpp: coarse_key), which the
// march skips. Inside allocated blocks the samples, the sign tests, the
// refinement and the normals are the dense ones, reading neighbours across block borders through the hash.
#include "fusion_math.hpp"
#include "sparse_volume_hash.hpp"
#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

/// The box of block coordinates [lo, hi] (inclusive) that holds every allocated block; empty when none is.
struct BlockBounds {
  int lo[3] = {0, 0, 0}, hi[3] = {-1, -1, -1};
  bool empty() const { return lo[0] > hi[0]; }
  void add(BlockCoord b) {
    const int c[3] = {b.x, b.y, b.z};
    const bool first = empty();
    for (int axis = 0; axis < 3; ++axis) {
      lo[axis] = first || c[axis] < lo[axis] ? c[axis] : lo[axis];
      hi[axis] = first || c[axis] > hi[axis] ? c[axis] : hi[axis];
    }
  }
};

struct SparseRaycastArgs {
  SparseGrid grid;
  Rigid camera_to_world;
  float fx, fy, cx, cy;
  int width, height;
  float range;  ///< metres, VolumeParams::sparse_raycast_range
  /// World box of the allocated blocks widened by one block on every side (box_lo > box_hi: none allocated).
  /// Samples outside it lie in no allocated block, so the march only runs through it: the same samples and
  /// result as a march over the whole range, without the hash look-ups of the empty space around the scene.
  float box_lo[3], box_hi[3];
};

/// The dense trilinear (PCL `interpolateTrilineary`, tsdf_math.hpp: trilinear) at world point p, with no border:
/// the same base voxel, weights and summation order. The eight voxels come from one block when they can.
S3D_HOST_DEVICE S3D_FORCEINLINE float sparse_trilinear(const SparseVoxels& vol, float voxel, Vec3f p) {
  const float fi = floorf(p.x / voxel), fj = floorf(p.y / voxel), fk = floorf(p.z / voxel);
  const float lim = static_cast<float>(kVoxelCoordLimit - 2);
  if (!(fi >= -lim && fi <= lim && fj >= -lim && fj <= lim && fk >= -lim && fk <= lim)) return NAN;
  int i = static_cast<int>(fi), j = static_cast<int>(fj), k = static_cast<int>(fk);
  if (p.x < (static_cast<float>(i) + 0.5f) * voxel) --i;
  if (p.y < (static_cast<float>(j) + 0.5f) * voxel) --j;
  if (p.z < (static_cast<float>(k) + 0.5f) * voxel) --k;
  const float a = (p.x - (static_cast<float>(i) + 0.5f) * voxel) / voxel;
  const float b = (p.y - (static_cast<float>(j) + 0.5f) * voxel) / voxel;
  const float c = (p.z - (static_cast<float>(k) + 0.5f) * voxel) / voxel;
  const float a1 = 1.0f - a, b1 = 1.0f - b, c1 = 1.0f - c;
  float f[8];  // (di, dj, dk) at di * 4 + dj * 2 + dk
  if ((i & 7) < 7 && (j & 7) < 7 && (k & 7) < 7) {
    const int slot = vol.block_slot(i, j, k);
    for (int n = 0; n < 8; ++n)
      f[n] = tsdf_value(vol.in_slot(slot, i + (n >> 2), j + ((n >> 1) & 1), k + (n & 1)).tsdf);
  } else {
    for (int n = 0; n < 8; ++n) f[n] = tsdf_value(vol.at(i + (n >> 2), j + ((n >> 1) & 1), k + (n & 1)).tsdf);
  }
  float r = f[0] * a1 * b1 * c1;
  r = r + f[1] * a1 * b1 * c;
  r = r + f[2] * a1 * b * c1;
  r = r + f[3] * a1 * b * c;
  r = r + f[4] * a * b1 * c1;
  r = r + f[5] * a * b1 * c;
  r = r + f[6] * a * b * c1;
  r = r + f[7] * a * b * c;
  return r;
}

/// Pixel (x, y)'s march (above). A - to + change stops without a hit; on + to - the dense refinement
/// (refine_surface) between samples t_{n-1} and t_n gives the vertex, and the normal is the central difference
/// of the trilinear tsdf at +-voxel/4 (no border rule). Invalid = NaN.
S3D_HOST_DEVICE S3D_FORCEINLINE void sparse_raycast_pixel(const SparseVoxels& vol, const SparseRaycastArgs& a, int x,
                                                          int y, Vec3f& vertex, Vec3f& normal) {
  vertex = invalid_vec3();
  normal = invalid_vec3();
  const float voxel = a.grid.voxel;
  const Vec3f start = {a.camera_to_world.t[0], a.camera_to_world.t[1], a.camera_to_world.t[2]};
  const Vec3f ray_camera = {(static_cast<float>(x) - a.cx) / a.fx, (static_cast<float>(y) - a.cy) / a.fy, 1.0f};
  Vec3f dir = a.camera_to_world.rotate(ray_camera);
  const float len = sqrtf(squared_norm(dir));
  dir = {dir.x / len, dir.y / len, dir.z / len};
  if (dir.x == 0.0f) dir.x = 1e-15f;
  if (dir.y == 0.0f) dir.y = 1e-15f;
  if (dir.z == 0.0f) dir.z = 1e-15f;
  const float step = a.grid.truncation * 0.8f;
  const float lim = static_cast<float>(kVoxelCoordLimit);
  const float tx0 = ((dir.x > 0.0f ? a.box_lo[0] : a.box_hi[0]) - start.x) / dir.x;
  const float ty0 = ((dir.y > 0.0f ? a.box_lo[1] : a.box_hi[1]) - start.y) / dir.y;
  const float tz0 = ((dir.z > 0.0f ? a.box_lo[2] : a.box_hi[2]) - start.z) / dir.z;
  const float tx1 = ((dir.x > 0.0f ? a.box_hi[0] : a.box_lo[0]) - start.x) / dir.x;
  const float ty1 = ((dir.y > 0.0f ? a.box_hi[1] : a.box_lo[1]) - start.y) / dir.y;
  const float tz1 = ((dir.z > 0.0f ? a.box_hi[2] : a.box_lo[2]) - start.z) / dir.z;
  const float t_enter = max_number(max_number(max_number(tx0, ty0), tz0), 0.0f);
  const float t_box_exit = min_number(min_number(tx1, ty1), tz1);
  const float t_end = min_number(t_box_exit, a.range);
  if (!(a.box_lo[0] <= a.box_hi[0] && t_enter < t_end)) return;
  float previous = 0.0f;
  int cached_block = -1;  // the slot of the last sample's block, to skip the hash while the march stays in it
  int cached[3] = {0, 0, 0};
  for (int n = static_cast<int>(floorf(t_enter / step));;) {
    const float t = static_cast<float>(n) * step;
    if (!(t < t_end)) return;
    const Vec3f q = ray_point(start, dir, t);
    const float fi = floorf(q.x / voxel), fj = floorf(q.y / voxel), fk = floorf(q.z / voxel);
    if (!(fi >= -lim && fi < lim && fj >= -lim && fj < lim && fk >= -lim && fk < lim)) return;
    const int i = static_cast<int>(fi), j = static_cast<int>(fj), k = static_cast<int>(fk);
    const int bi = i >> 3, bj = j >> 3, bk = k >> 3;
    if (cached_block < 0 || bi != cached[0] || bj != cached[1] || bk != cached[2]) {
      cached_block = vol.hash.find(bi, bj, bk);
      cached[0] = bi, cached[1] = bj, cached[2] = bk;
    }
    if (cached_block < 0) {
      // Unobserved up to the exit of the largest empty cell around the sample (the block, or its coarse cell of
      // 4^3 or 16^3 blocks): resume at the first sample past it (at least the next one).
      int shift = 3;  // the cell's side is 2^shift voxels
      for (int level = 0; level < kCoarseLevels; ++level) {
        if (vol.coarse[level].contains(coarse_key({bi, bj, bk}, level))) break;
        shift = 3 + coarse_shift(level);
      }
      // The cell's corner, i rounded down to a multiple of side: `& -side` (no left shift of a negative value).
      const int side = 1 << shift, ci = i & -side, cj = j & -side, ck = k & -side;
      const float lo[3] = {static_cast<float>(ci) * voxel, static_cast<float>(cj) * voxel,
                           static_cast<float>(ck) * voxel};
      const float hi[3] = {static_cast<float>(ci + side) * voxel, static_cast<float>(cj + side) * voxel,
                           static_cast<float>(ck + side) * voxel};
      const float tx = ((dir.x > 0.0f ? hi[0] : lo[0]) - start.x) / dir.x;
      const float ty = ((dir.y > 0.0f ? hi[1] : lo[1]) - start.y) / dir.y;
      const float tz = ((dir.z > 0.0f ? hi[2] : lo[2]) - start.z) / dir.z;
      const float t_exit = min_number(min_number(tx, ty), tz);
      const float next = floorf(t_exit / step) + 1.0f;
      if (!(next * step < t_end)) return;
      previous = 0.0f;
      n = next > static_cast<float>(n) ? static_cast<int>(next) : n + 1;
      continue;
    }
    const float tsdf = tsdf_value(vol.in_slot(cached_block, i, j, k).tsdf);
    if (previous < 0.0f && tsdf > 0.0f) return;  // back face
    if (previous > 0.0f && tsdf < 0.0f) {        // strict: unobserved voxels (0) are neither side
      const float tp = static_cast<float>(n - 1) * step;
      const float f_next = sparse_trilinear(vol, voxel, q);
      if (f_next != f_next) return;
      const float f_cur = sparse_trilinear(vol, voxel, ray_point(start, dir, tp));
      if (f_cur != f_cur) return;
      const float ts = tp - (step * f_cur) / (f_next - f_cur);
      if (!(ts - ts == 0.0f)) return;  // inf or NaN
      const Vec3f v = ray_point(start, dir, ts);
      vertex = v;
      const float qd = voxel / 4.0f;
      const float nx =
          sparse_trilinear(vol, voxel, {v.x + qd, v.y, v.z}) - sparse_trilinear(vol, voxel, {v.x - qd, v.y, v.z});
      const float ny =
          sparse_trilinear(vol, voxel, {v.x, v.y + qd, v.z}) - sparse_trilinear(vol, voxel, {v.x, v.y - qd, v.z});
      const float nz =
          sparse_trilinear(vol, voxel, {v.x, v.y, v.z + qd}) - sparse_trilinear(vol, voxel, {v.x, v.y, v.z - qd});
      const float nn = sqrtf(((nx * nx) + (ny * ny)) + (nz * nz));
      if (nn > 0.0f && nn - nn == 0.0f) normal = {nx / nn, ny / nn, nz / nn};
      return;
    }
    previous = tsdf;
    ++n;
  }
}

}  // namespace s3d::fusion::detail
