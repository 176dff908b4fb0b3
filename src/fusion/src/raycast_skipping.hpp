#pragma once
// Internal, CPU backend: the ray cast of tsdf_math.hpp's raycast_pixel with empty space skipped, same samples,
// same result bit for bit.
//
// Why it is exact: the march ends only where a sample < 0 follows one > 0 (a surface) or a sample > 0 follows
// one < 0 (a back face). Where no voxel is negative every sample is >= 0, so once the sample before it is >= 0
// nothing there can end the march: those samples are not read, only counted off (t += step, the same float
// additions as the plain march). A skipped sample whose value is needed later (a sample < 0 right after it) is
// read then, at the cell the plain march would have computed. Samples are skipped only where the exact ray
// point lies at least `margin` inside a box of bricks without negative voxels on every axis, far more than the
// float error of ray_point and floor_cell (see skip_margin), so a skipped sample's floor voxel is in that box
// whichever way the rounding goes.
//
// The boxes: the volume is cut into bricks (BrickMap); each brick knows its Chebyshev distance (in bricks,
// capped) to the nearest brick that may hold a negative voxel (the integration marks them as it writes). From
// a sample in a brick at distance r >= 1, the cube of bricks within r - 1 of it is free of negative voxels, so
// the march counts off every sample inside that cube at once, however many bricks it spans (an empty-space
// skip in the manner of sphere tracing, on the brick grid).
#include <cmath>
#include <cstdint>
#include <vector>

#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

/// Per brick of side()^3 voxels: whether a voxel in it may be negative (marked), and the Chebyshev distance, in
/// bricks, to the nearest marked brick (0 for a marked one), capped at kMaxDistance. Bricks are 4^3 voxels up
/// to 256 voxels a side, larger beyond, so that the map stays at most 64 bricks a side (a column of bricks fits
/// a 64-bit mask). A mark may outlive the negative voxel that set it (the march then only skips less), never
/// the other way round.
class BrickMap {
 public:
  static constexpr int kMaxDistance = 8;

  /// Sizes the map for `g`, nothing marked.
  void reset(const VolumeGrid& g);
  /// Marks the brick of voxel (i, j, k); safe from several threads at once.
  void mark(int i, int j, int k) {
    std::uint8_t* m = &marks_[brick_index(i >> shift_, j >> shift_, k >> shift_)];
    if (__atomic_load_n(m, __ATOMIC_RELAXED) == 0) __atomic_store_n(m, std::uint8_t{1}, __ATOMIC_RELAXED);
  }
  /// Recomputes the distances from the marks (OpenMP).
  void update_distances();
  /// reset(g), a mark for every brick holding a voxel with a negative stored tsdf, update_distances().
  void build(const Voxel* vol, const VolumeGrid& g);

  /// The distance of the brick holding voxel (i, j, k).
  int distance(int i, int j, int k) const { return distance_[brick_index(i >> shift_, j >> shift_, k >> shift_)]; }
  /// The marks (1: the brick may hold a negative voxel), x fastest; 3 bytes follow the last, so that a 32-bit
  /// load at any brick stays inside.
  const std::uint8_t* marks() const { return marks_.data(); }
  /// log2 of the brick side.
  int shift() const { return shift_; }
  /// Bricks along axis 0 (x), 1 (y) or 2 (z).
  int count(int axis) const { return axis == 0 ? bx_ : axis == 1 ? by_ : bz_; }

 private:
  std::size_t brick_index(int bi, int bj, int bk) const { return (static_cast<std::size_t>(bk) * by_ + bj) * bx_ + bi; }
  int shift_ = 2, bx_ = 0, by_ = 0, bz_ = 0;
  std::vector<std::uint8_t> marks_, distance_;
};

/// The distance (metres, volume-local) a skipped sample keeps from its box's faces. The float ray point
/// start + t * dir and its floor_cell division err by a few units of 2^-24 times |start| + |t| (|dir| = 1,
/// t < march_limit); this is > 25 times that.
inline double skip_margin(Vec3f start, float max_t) {
  return 1e-5 * (1.0 + std::fabs(start.x) + std::fabs(start.y) + std::fabs(start.z) + 2.0 * max_t);
}

/// The ray as the skipping march sees it: in double, where start + t * dir of floats is exact but for the
/// last rounding.
struct SkipRay {
  double origin[3], inverse[3];
  bool ascending[3];
  double margin;

  SkipRay() = default;
  SkipRay(Vec3f start, Vec3f dir, double margin_m) : margin(margin_m) {
    const float o[3] = {start.x, start.y, start.z}, d[3] = {dir.x, dir.y, dir.z};
    for (int a = 0; a < 3; ++a) {
      origin[a] = o[a];
      inverse[a] = 1.0 / d[a];
      ascending[a] = d[a] > 0.0f;
    }
  }

  /// The interval [lo, hi] of t where the point lies in voxels [first, end) per axis, shrunk by `margin` on
  /// every side (empty when lo > hi).
  void interval(const VolumeGrid& g, const int first[3], const int end[3], double& lo, double& hi) const {
    const float voxel[3] = {g.voxel.x, g.voxel.y, g.voxel.z};
    lo = -INFINITY;
    hi = INFINITY;
    for (int a = 0; a < 3; ++a) {
      const double low = first[a] * static_cast<double>(voxel[a]) + margin;
      const double high = end[a] * static_cast<double>(voxel[a]) - margin;
      const double t_low = (low - origin[a]) * inverse[a], t_high = (high - origin[a]) * inverse[a];
      const double enter = ascending[a] ? t_low : t_high, leave = ascending[a] ? t_high : t_low;
      lo = enter > lo ? enter : lo;  // not std::fmax / fmin: libm calls here
      hi = leave < hi ? leave : hi;
    }
  }
};

/// raycast_pixel, counting off the samples in empty space (see the file comment).
inline void raycast_pixel_skipping(const Voxel* vol, const BrickMap& bricks, const RaycastArgs& a, int x, int y,
                                   Vec3f& vertex, Vec3f& normal) {
  March m;
  if (!begin_march(vol, a, x, y, vertex, normal, m)) return;
  const VolumeGrid& g = a.grid;
  const Vec3f start = m.start, dir = m.dir;
  const float step = m.step, max_t = m.max_t;
  float t = m.t, tsdf = m.tsdf;
  bool read = true;  // false: the sample at t was skipped (it is >= 0) and `tsdf` does not hold it
  const SkipRay ray(start, dir, skip_margin(start, max_t));
  const int n[3] = {g.nx, g.ny, g.nz};
  while (t < max_t) {
    const Vec3f q = ray_point(start, dir, t + step);
    int i, j, k;
    if (!sample_cell(g, q, i, j, k)) return;
    const int free_bricks = bricks.distance(i, j, k);
    if (!(read && tsdf < 0.0f) && free_bricks > 0) {
      t = t + step;
      read = false;
      // The cube of bricks within free_bricks - 1 of this one, clipped to the grid, has no negative voxel.
      const int cell[3] = {i, j, k};
      const int shift = bricks.shift();
      int first[3], end[3];
      for (int axis = 0; axis < 3; ++axis) {
        const int b = cell[axis] >> shift;
        const int lo_brick = b - (free_bricks - 1), hi_brick = b + free_bricks;
        first[axis] = lo_brick > 0 ? lo_brick << shift : 0;
        end[axis] = (hi_brick << shift) < n[axis] ? hi_brick << shift : n[axis];
      }
      double lo, hi;
      ray.interval(g, first, end, lo, hi);
      while (t < max_t) {
        const float next = t + step;
        if (!(next >= lo && next <= hi)) break;
        t = next;
      }
      continue;
    }
    float previous = tsdf;
    tsdf = read_tsdf(vol, g, i, j, k);
    if (!read && tsdf < 0.0f) {
      int pi, pj, pk;
      sample_cell(g, ray_point(start, dir, t), pi, pj, pk);  // inside the grid: it was skipped in a box
      previous = read_tsdf(vol, g, pi, pj, pk);
    }
    read = true;
    if (previous < 0.0f && tsdf > 0.0f) return;  // back face
    if (previous > 0.0f && tsdf < 0.0f) {
      refine_surface(vol, g, start, dir, t, step, q, vertex, normal);
      return;
    }
    t = t + step;
  }
}

/// Every pixel of an a.width x a.height map (OpenMP over rows; AVX2 code where the CPU has it and S3D_CPU_ISA
/// allows it, the same results either way).
void raycast_skipping_cpu(const Voxel* vol, const BrickMap& bricks, const RaycastArgs& a, Vec3f* vertices,
                          Vec3f* normals);

}  // namespace s3d::fusion::detail
