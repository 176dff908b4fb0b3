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
//
// Start tiles (after InfiniTAM's forward projection of the visible blocks, Kähler et al. 2015, "Very High Frame
// Rate Volumetric Integration of Depth Images on Mobile Devices"): before the march, every allocated block is
// projected into tiles of kStartTile² pixels, each tile keeping the least camera depth of the blocks that may
// cover it (block_start_tiles). A pixel's march then begins at the last sample before that depth, or returns
// at once where no block covers its tile. The samples it leaves out lie in no allocated block, read as
// unobserved and leave no state behind (a skip resets `previous`), so the maps are those of the march from the
// box entry, bit for bit (tested against it): the tiles only move work, and the backends may round them
// differently.
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
  Rigid world_to_camera;  ///< inverse_rigid(camera_to_world), for block_start_tiles
  /// Per start tile (row-major, tile_cols a row): the least camera depth, metres, at which an allocated block
  /// may meet the tile's rays, +inf where none can. Null: every ray marches from the box entry.
  const float* start_depth = nullptr;
  int tile_cols = 0, tile_rows = 0;
};

constexpr int kStartTile = 8;  ///< pixels on a side of a start tile

/// Block b's tiles and depth for the start tiles (above): writes the inclusive tile rectangle {x0, y0, x1, y1}
/// of the pixels whose rays may meet the block, and a lower bound of the camera depth of its points; false when
/// no pixel's ray can meet it (behind the camera, or projected off the image). Conservative: a block with a
/// corner nearer than one block edge to the camera plane covers the whole image from depth 0, and the corners'
/// projections are widened by a pixel (the image of the box is the convex hull of its corners').
S3D_HOST_DEVICE S3D_FORCEINLINE bool block_start_tiles(const SparseRaycastArgs& a, BlockCoord b, int rect[4],
                                                       float& depth) {
  const BlockImage im = block_image(a.world_to_camera, a.grid.block, b, a.grid.block, a.fx, a.fy, a.cx, a.cy);
  const bool near = !im.all_far;
  if (im.all_behind) return false;
  int x0 = 0, y0 = 0, x1 = a.width - 1, y1 = a.height - 1;
  if (!near) {
    if (im.u_hi < -1.0 || im.v_hi < -1.0 || im.u_lo > a.width || im.v_lo > a.height) return false;
    x0 = im.u_lo - 1.0 > 0.0 ? static_cast<int>(im.u_lo - 1.0) : 0;
    y0 = im.v_lo - 1.0 > 0.0 ? static_cast<int>(im.v_lo - 1.0) : 0;
    x1 = im.u_hi + 1.0 < a.width - 1 ? static_cast<int>(im.u_hi + 1.0) + 1 : a.width - 1;
    y1 = im.v_hi + 1.0 < a.height - 1 ? static_cast<int>(im.v_hi + 1.0) + 1 : a.height - 1;
  }
  rect[0] = x0 / kStartTile;
  rect[1] = y0 / kStartTile;
  rect[2] = x1 / kStartTile;
  rect[3] = y1 / kStartTile;
  depth = near || im.z_lo < 0.0 ? 0.0f : static_cast<float>(im.z_lo);
  return true;
}

/// The trilinear's base voxel on one axis (the dense trilinear's: the last voxel whose centre is at or below
/// p); false beyond the voxel coordinate range.
S3D_HOST_DEVICE S3D_FORCEINLINE bool trilinear_base(float p, float voxel, int& i) {
  const float f = floorf(p / voxel);
  const float lim = static_cast<float>(kVoxelCoordLimit - 2);
  if (!(f >= -lim && f <= lim)) return false;
  i = static_cast<int>(f);
  if (p < (static_cast<float>(i) + 0.5f) * voxel) --i;
  return true;
}

/// The pool slots of the blocks holding voxels lo..hi (inclusive, hi - lo < 8 on every axis: at most two blocks
/// an axis), each looked up once for all the trilinear reads among them.
struct SlotCube {
  int b0[3], b1[3];  ///< first and last block, per axis
  int slot[8];       ///< block b0 + (o >> 2, (o >> 1) & 1, o & 1) at o; -1: not allocated (or not in lo..hi)

  S3D_HOST_DEVICE S3D_FORCEINLINE void load(const SparseVoxels& vol, const int lo[3], const int hi[3]) {
    for (int a = 0; a < 3; ++a) {
      b0[a] = lo[a] >> 3;
      b1[a] = hi[a] >> 3;
    }
    for (int o = 0; o < 8; ++o) {
      const int x = b0[0] + (o >> 2), y = b0[1] + ((o >> 1) & 1), z = b0[2] + (o & 1);
      slot[o] = x <= b1[0] && y <= b1[1] && z <= b1[2] ? vol.hash.find(x, y, z) : -1;
    }
  }
  /// Whether voxels (i..i+1, j..j+1, k..k+1) lie in the cube's blocks.
  S3D_HOST_DEVICE S3D_FORCEINLINE bool covers(int i, int j, int k) const {
    return (i >> 3) >= b0[0] && ((i + 1) >> 3) <= b1[0] && (j >> 3) >= b0[1] && ((j + 1) >> 3) <= b1[1] &&
           (k >> 3) >= b0[2] && ((k + 1) >> 3) <= b1[2];
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE Voxel at(const SparseVoxels& vol, int i, int j, int k) const {
    return vol.in_slot(slot[(((i >> 3) - b0[0]) << 2) | (((j >> 3) - b0[1]) << 1) | ((k >> 3) - b0[2])], i, j, k);
  }
};

/// The trilinear's weights at p from base voxel (i, j, k) and the eight voxels' values, in the dense trilinear's
/// summation order.
S3D_HOST_DEVICE S3D_FORCEINLINE float trilinear_sum(float voxel, Vec3f p, int i, int j, int k, const float f[8]) {
  const float a = (p.x - (static_cast<float>(i) + 0.5f) * voxel) / voxel;
  const float b = (p.y - (static_cast<float>(j) + 0.5f) * voxel) / voxel;
  const float c = (p.z - (static_cast<float>(k) + 0.5f) * voxel) / voxel;
  const float a1 = 1.0f - a, b1 = 1.0f - b, c1 = 1.0f - c;
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

/// A block whose pool slot the caller holds (the march's current block): a trilinear that needs it takes the
/// slot instead of looking it up again (the same slot, the same value). slot -1: none.
struct KnownBlock {
  int b[3];
  int slot;
};

/// The dense trilinear (PCL `interpolateTrilineary`, tsdf_math.hpp: trilinear) at world point p, with no border:
/// the same base voxel, weights and summation order.
S3D_HOST_DEVICE S3D_FORCEINLINE float sparse_trilinear(const SparseVoxels& vol, float voxel, Vec3f p,
                                                       const KnownBlock& known = {{0, 0, 0}, -1}) {
  // trilinear_base on the three axes.
  const float fi = floorf(p.x / voxel), fj = floorf(p.y / voxel), fk = floorf(p.z / voxel);
  const float lim = static_cast<float>(kVoxelCoordLimit - 2);
  if (!(fi >= -lim && fi <= lim && fj >= -lim && fj <= lim && fk >= -lim && fk <= lim)) return NAN;
  int i = static_cast<int>(fi), j = static_cast<int>(fj), k = static_cast<int>(fk);
  if (p.x < (static_cast<float>(i) + 0.5f) * voxel) --i;
  if (p.y < (static_cast<float>(j) + 0.5f) * voxel) --j;
  if (p.z < (static_cast<float>(k) + 0.5f) * voxel) --k;
  // The eight voxels lie in the base voxel's block and, on the axes where the base voxel is its block's last,
  // the next block: each of those (at most eight, usually one) is looked up once.
  const int si = (i & 7) == 7, sj = (j & 7) == 7, sk = (k & 7) == 7;
  int slot[8] = {-1, -1, -1, -1, -1, -1, -1, -1};  // by block offset (bi, bj, bk) at bi * 4 + bj * 2 + bk
  for (int o = 0; o < 8; ++o) {
    const int bi = o >> 2, bj = (o >> 1) & 1, bk = o & 1;
    if ((bi & ~si) | (bj & ~sj) | (bk & ~sk)) continue;  // that block holds none of the eight
    const int x = (i >> 3) + bi, y = (j >> 3) + bj, z = (k >> 3) + bk;
    slot[o] =
        known.slot >= 0 && x == known.b[0] && y == known.b[1] && z == known.b[2] ? known.slot : vol.hash.find(x, y, z);
  }
  float f[8];  // (di, dj, dk) at di * 4 + dj * 2 + dk
  for (int n = 0; n < 8; ++n) {
    const int di = n >> 2, dj = (n >> 1) & 1, dk = n & 1;
    f[n] = tsdf_value(vol.in_slot(slot[((di & si) << 2) | ((dj & sj) << 1) | (dk & sk)], i + di, j + dj, k + dk).tsdf);
  }
  return trilinear_sum(voxel, p, i, j, k, f);
}

/// sparse_trilinear with the blocks of `cube` (the same value); where the cube does not hold the eight voxels,
/// sparse_trilinear itself.
S3D_HOST_DEVICE S3D_FORCEINLINE float sparse_trilinear(const SparseVoxels& vol, float voxel, Vec3f p,
                                                       const SlotCube& cube) {
  int i, j, k;
  if (!trilinear_base(p.x, voxel, i) || !trilinear_base(p.y, voxel, j) || !trilinear_base(p.z, voxel, k)) return NAN;
  if (!cube.covers(i, j, k)) return sparse_trilinear(vol, voxel, p);
  float f[8];
  for (int n = 0; n < 8; ++n) f[n] = tsdf_value(cube.at(vol, i + (n >> 2), j + ((n >> 1) & 1), k + (n & 1)).tsdf);
  return trilinear_sum(voxel, p, i, j, k, f);
}

/// f(v + qd e) - f(v - qd e) for each axis e.
template <typename Sample>
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f central_difference(Vec3f v, float qd, const Sample& f) {
  return {f(Vec3f{v.x + qd, v.y, v.z}) - f(Vec3f{v.x - qd, v.y, v.z}),
          f(Vec3f{v.x, v.y + qd, v.z}) - f(Vec3f{v.x, v.y - qd, v.z}),
          f(Vec3f{v.x, v.y, v.z + qd}) - f(Vec3f{v.x, v.y, v.z - qd})};
}

/// The normal at surface point v: the central difference of the trilinear tsdf at +-voxel/4 on each axis.
/// Without `share`, each of the six samples looks up its blocks; with it, their voxels (at most three an axis,
/// from the base of v - qd to that of v + qd plus one: the base is monotonic in the coordinate) are looked up
/// once. The same value either way.
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f sparse_normal(const SparseVoxels& vol, float voxel, Vec3f v, bool share,
                                                    const KnownBlock& known = {{0, 0, 0}, -1}) {
  const float qd = voxel / 4.0f;
  int lo[3], hi[3];
  if (share && trilinear_base(v.x - qd, voxel, lo[0]) && trilinear_base(v.y - qd, voxel, lo[1]) &&
      trilinear_base(v.z - qd, voxel, lo[2]) && trilinear_base(v.x + qd, voxel, hi[0]) &&
      trilinear_base(v.y + qd, voxel, hi[1]) && trilinear_base(v.z + qd, voxel, hi[2]) && hi[0] - lo[0] < 7 &&
      hi[1] - lo[1] < 7 && hi[2] - lo[2] < 7) {
    for (int axis = 0; axis < 3; ++axis) ++hi[axis];
    SlotCube cube;
    cube.load(vol, lo, hi);
    return central_difference(v, qd, [&](Vec3f p) { return sparse_trilinear(vol, voxel, p, cube); });
  }
  return central_difference(v, qd, [&](Vec3f p) { return sparse_trilinear(vol, voxel, p, known); });
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
  float t_enter = max_number(max_number(max_number(tx0, ty0), tz0), 0.0f);
  if (a.start_depth != nullptr) {
    const float z = a.start_depth[(y / kStartTile) * a.tile_cols + x / kStartTile];
    if (!(z < INFINITY)) return;  // no allocated block covers the tile
    // A point of the ray at camera depth z lies at t = z * len; the margins cover the rounding of both.
    t_enter = max_number(t_enter, z * len * 0.999f - voxel);
  }
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
      // The refinement's and the normal's samples lie about this sample: most need only its block.
      const KnownBlock known = {{bi, bj, bk}, cached_block};
      const float f_next = sparse_trilinear(vol, voxel, q, known);
      if (f_next != f_next) return;
      const float f_cur = sparse_trilinear(vol, voxel, ray_point(start, dir, tp), known);
      if (f_cur != f_cur) return;
      const float ts = tp - (step * f_cur) / (f_next - f_cur);
      if (!(ts - ts == 0.0f)) return;  // inf or NaN
      const Vec3f v = ray_point(start, dir, ts);
      vertex = v;
      // The GPU shares the six samples' block look-ups (their memory latency made the normal about 2/3 of the
      // ray cast's time; 1/2 with them shared, H200, redkitchen); the CPU, whose look-ups hit its caches,
      // measured slower with them shared.
#ifdef __CUDA_ARCH__
      const Vec3f g = sparse_normal(vol, voxel, v, true);
#else
      const Vec3f g = sparse_normal(vol, voxel, v, false, known);
#endif
      const float nx = g.x, ny = g.y, nz = g.z;
      const float nn = sqrtf(((nx * nx) + (ny * ny)) + (nz * nz));
      if (nn > 0.0f && nn - nn == 0.0f) normal = {nx / nn, ny / nn, nz / nn};
      return;
    }
    previous = tsdf;
    ++n;
  }
}

}  // namespace s3d::fusion::detail
