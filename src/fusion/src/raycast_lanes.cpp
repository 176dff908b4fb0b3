#include "raycast_lanes.hpp"

#include <cstdint>

#include "voxel_lanes.hpp"

namespace s3d::fusion::detail {

#if S3D_AVX2_REGION
// Everything up to the dispatcher is AVX2 code (lambdas included), only ever called where the CPU has it.
S3D_AVX2_REGION_BEGIN
namespace {

using lanes::iota;
using lanes::kLanes;
using lanes::set;
using lanes::tsdf_of_words;

/// Constants of the grid as 8-lane vectors.
struct GridLanes {
  __m256 voxel[3], last[3], below_last[3];
  __m256i nx, nxy;
  const int* words;
  const std::uint8_t* marks = nullptr;  ///< the brick marks, null: no skipping
  int shift = 0;
  __m256i bricks_x, bricks_xy;

  GridLanes(const Voxel* vol, const BrickMap* bricks, const VolumeGrid& g) {
    if (bricks != nullptr) {
      marks = bricks->marks();
      shift = bricks->shift();
      bricks_x = _mm256_set1_epi32(bricks->count(0));
      bricks_xy = _mm256_set1_epi32(bricks->count(0) * bricks->count(1));
    }
    const float v[3] = {g.voxel.x, g.voxel.y, g.voxel.z};
    const int n[3] = {g.nx, g.ny, g.nz};
    for (int a = 0; a < 3; ++a) {
      voxel[a] = _mm256_set1_ps(v[a]);
      last[a] = _mm256_set1_ps(static_cast<float>(n[a] - 1));
      below_last[a] = _mm256_set1_ps(static_cast<float>(n[a] - 2));
    }
    nx = _mm256_set1_epi32(g.nx);
    nxy = _mm256_set1_epi32(g.nx * g.ny);
    words = reinterpret_cast<const int*>(vol);
  }

  /// VolumeGrid::index of the cells (whole floats) in the lanes of `mask`, 0 in the others (whose cells may be
  /// anything). int32 suffices: raycast_lanes_cpu takes grids of fewer than 2^31 voxels.
  __m256i index(const __m256 cell[3], __m256 mask) const {
    const __m256i i = _mm256_cvttps_epi32(cell[0]), j = _mm256_cvttps_epi32(cell[1]), k = _mm256_cvttps_epi32(cell[2]);
    return _mm256_and_si256(_mm256_castps_si256(mask), _mm256_add_epi32(_mm256_add_epi32(i, _mm256_mullo_epi32(nx, j)),
                                                                        _mm256_mullo_epi32(nxy, k)));
  }

  /// sample_cell in lanes: the floor voxels of volume-local points q into `cell`; returns the lanes of `mask`
  /// whose cell lies in the grid.
  __m256 sample_cells(const __m256 q[3], __m256 cell[3], __m256 mask) const {
    const __m256 zero = _mm256_setzero_ps();
    for (int a = 0; a < 3; ++a) {
      cell[a] = _mm256_floor_ps(_mm256_div_ps(q[a], voxel[a]));
      mask = _mm256_and_ps(
          mask, _mm256_and_ps(_mm256_cmp_ps(cell[a], zero, _CMP_GE_OQ), _mm256_cmp_ps(cell[a], last[a], _CMP_LE_OQ)));
    }
    return mask;
  }

  /// The marks of the cells' bricks in the lanes of `mask` (0 in the others).
  __m256i brick_mark(const __m256 cell[3], __m256 mask) const {
    const __m128i count = _mm_cvtsi32_si128(shift);
    const __m256i bi = _mm256_srl_epi32(_mm256_cvttps_epi32(cell[0]), count);
    const __m256i bj = _mm256_srl_epi32(_mm256_cvttps_epi32(cell[1]), count);
    const __m256i bk = _mm256_srl_epi32(_mm256_cvttps_epi32(cell[2]), count);
    const __m256i index = _mm256_and_si256(
        _mm256_castps_si256(mask),
        _mm256_add_epi32(_mm256_add_epi32(bi, _mm256_mullo_epi32(bricks_x, bj)), _mm256_mullo_epi32(bricks_xy, bk)));
    const __m256i bytes = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), reinterpret_cast<const int*>(marks),
                                                      index, _mm256_castps_si256(mask), 1);
    return _mm256_and_si256(bytes, _mm256_set1_epi32(0xff));
  }
};

/// The stored tsdf of voxel word `index` in the lanes of `mask` (0 elsewhere), as tsdf_value.
S3D_ALWAYS_INLINE __m256 gather_tsdf(const int* words, __m256i index, __m256 mask) {
  const __m256i word = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), words, index, _mm256_castps_si256(mask), 4);
  return tsdf_of_words(word);
}

/// trilinear() in 8 lanes: the same operations in the same order; NaN where trilinear gives NaN or `mask` is off.
S3D_ALWAYS_INLINE __m256 trilinear_lanes(const GridLanes& gl, __m256 px, __m256 py, __m256 pz, __m256 mask) {
  const __m256 p[3] = {px, py, pz};
  const __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  __m256 base[3], frac[3];
  __m256 ok = mask;
  for (int a = 0; a < 3; ++a) {
    const __m256 f = _mm256_floor_ps(_mm256_div_ps(p[a], gl.voxel[a]));
    ok = _mm256_and_ps(
        ok, _mm256_and_ps(_mm256_cmp_ps(f, one, _CMP_GE_OQ), _mm256_cmp_ps(f, gl.below_last[a], _CMP_LE_OQ)));
    const __m256 below = _mm256_cmp_ps(p[a], _mm256_mul_ps(_mm256_add_ps(f, half), gl.voxel[a]), _CMP_LT_OQ);
    base[a] = _mm256_sub_ps(f, _mm256_and_ps(below, one));
    frac[a] = _mm256_div_ps(_mm256_sub_ps(p[a], _mm256_mul_ps(_mm256_add_ps(base[a], half), gl.voxel[a])), gl.voxel[a]);
  }
  const __m256i v000 = gl.index(base, ok);
  const __m256i dx = _mm256_set1_epi32(1), dy = gl.nx, dz = gl.nxy;
  const __m256 a = frac[0], b = frac[1], c = frac[2];
  const __m256 a1 = _mm256_sub_ps(one, a), b1 = _mm256_sub_ps(one, b), c1 = _mm256_sub_ps(one, c);
  const int* w = gl.words;
  const auto term = [&](__m256i offset, __m256 wa, __m256 wb, __m256 wc) {
    const __m256 v = gather_tsdf(w, _mm256_add_epi32(v000, offset), ok);
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(v, wa), wb), wc);
  };
  const __m256i zero = _mm256_setzero_si256();
  __m256 r = term(zero, a1, b1, c1);
  r = _mm256_add_ps(r, term(dz, a1, b1, c));
  r = _mm256_add_ps(r, term(dy, a1, b, c1));
  r = _mm256_add_ps(r, term(_mm256_add_epi32(dy, dz), a1, b, c));
  r = _mm256_add_ps(r, term(dx, a, b1, c1));
  r = _mm256_add_ps(r, term(_mm256_add_epi32(dx, dz), a, b1, c));
  r = _mm256_add_ps(r, term(_mm256_add_epi32(dx, dy), a, b, c1));
  r = _mm256_add_ps(r, term(_mm256_add_epi32(dx, _mm256_add_epi32(dy, dz)), a, b, c));
  return _mm256_blendv_ps(_mm256_set1_ps(NAN), r, ok);
}

/// refine_surface() in the lanes of `hit`, writing vertex and normal of lane l to out_vertex[l], out_normal[l]
/// where refine_surface would (the others keep what they hold).
S3D_ALWAYS_INLINE void refine_lanes(const GridLanes& gl, const VolumeGrid& g, const __m256 s[3], const __m256 dir[3],
                                    __m256 t, float step, const __m256 q[3], __m256 hit, Vec3f* out_vertex,
                                    Vec3f* out_normal) {
  const __m256 vstep = _mm256_set1_ps(step);
  const __m256 f_next = trilinear_lanes(gl, q[0], q[1], q[2], hit);
  __m256 ok = _mm256_and_ps(hit, _mm256_cmp_ps(f_next, f_next, _CMP_ORD_Q));
  __m256 pc[3];
  for (int a = 0; a < 3; ++a) pc[a] = _mm256_add_ps(s[a], _mm256_mul_ps(t, dir[a]));
  const __m256 f_cur = trilinear_lanes(gl, pc[0], pc[1], pc[2], ok);
  ok = _mm256_and_ps(ok, _mm256_cmp_ps(f_cur, f_cur, _CMP_ORD_Q));
  const __m256 ts = _mm256_sub_ps(t, _mm256_div_ps(_mm256_mul_ps(vstep, f_cur), _mm256_sub_ps(f_next, f_cur)));
  ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_sub_ps(ts, ts), _mm256_setzero_ps(), _CMP_EQ_OQ));
  int lanes = _mm256_movemask_ps(ok);
  if (lanes == 0) return;
  __m256 v[3];
  for (int a = 0; a < 3; ++a) v[a] = _mm256_add_ps(s[a], _mm256_mul_ps(ts, dir[a]));
  const float origin[3] = {g.origin.x, g.origin.y, g.origin.z};
  alignas(32) float vertex[3][8], normal[3][8];
  for (int a = 0; a < 3; ++a) _mm256_store_ps(vertex[a], _mm256_add_ps(v[a], _mm256_set1_ps(origin[a])));
  // The normal where the floor voxel at t lies in [2, n - 3] on every axis.
  __m256 inner = ok;
  for (int a = 0; a < 3; ++a) {
    const __m256 f = _mm256_floor_ps(_mm256_div_ps(pc[a], gl.voxel[a]));
    inner = _mm256_and_ps(
        inner, _mm256_and_ps(_mm256_cmp_ps(f, _mm256_set1_ps(2.0f), _CMP_GE_OQ),
                             _mm256_cmp_ps(f, _mm256_sub_ps(gl.below_last[a], _mm256_set1_ps(1.0f)), _CMP_LE_OQ)));
  }
  int normals = _mm256_movemask_ps(inner);
  if (normals != 0) {
    const float quarter[3] = {g.voxel.x / 4.0f, g.voxel.y / 4.0f, g.voxel.z / 4.0f};
    __m256 d[3];
    for (int a = 0; a < 3; ++a) {
      __m256 plus[3] = {v[0], v[1], v[2]}, minus[3] = {v[0], v[1], v[2]};
      plus[a] = _mm256_add_ps(v[a], _mm256_set1_ps(quarter[a]));
      minus[a] = _mm256_sub_ps(v[a], _mm256_set1_ps(quarter[a]));
      d[a] = _mm256_sub_ps(trilinear_lanes(gl, plus[0], plus[1], plus[2], inner),
                           trilinear_lanes(gl, minus[0], minus[1], minus[2], inner));
    }
    const __m256 n = _mm256_sqrt_ps(
        _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(d[0], d[0]), _mm256_mul_ps(d[1], d[1])), _mm256_mul_ps(d[2], d[2])));
    inner = _mm256_and_ps(inner, _mm256_and_ps(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_GT_OQ),
                                               _mm256_cmp_ps(_mm256_sub_ps(n, n), _mm256_setzero_ps(), _CMP_EQ_OQ)));
    normals = _mm256_movemask_ps(inner);
    for (int a = 0; a < 3; ++a) _mm256_store_ps(normal[a], _mm256_div_ps(d[a], n));
  }
  for (; lanes != 0; lanes &= lanes - 1) {
    const int l = __builtin_ctz(lanes);
    out_vertex[l] = {vertex[0][l], vertex[1][l], vertex[2][l]};
    if (normals & (1 << l)) out_normal[l] = {normal[0][l], normal[1][l], normal[2][l]};
  }
}

/// max_number / min_number (tsdf_math.hpp) in 8 lanes: a NaN operand gives the other one.
S3D_ALWAYS_INLINE __m256 max_number_lanes(__m256 a, __m256 b) {
  return _mm256_blendv_ps(b, a, _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q)));
}
S3D_ALWAYS_INLINE __m256 min_number_lanes(__m256 a, __m256 b) {
  return _mm256_blendv_ps(b, a, _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q)));
}

/// The 8 marches' state before their first step (begin_march in lanes).
struct MarchLanes {
  __m256 start[3], dir[3], t, tsdf;
  __m256 started;  ///< the lanes whose ray meets the box (and lie below the map's width)
};

/// begin_march for pixels x0 .. x0 + 7 of row y: pixel_ray and entry_tsdf with the same operations in the same
/// order. Sets every lane's outputs (below a.width) invalid first.
MarchLanes begin_lanes(const GridLanes& gl, const RaycastArgs& a, int x0, int y, Vec3f* vertices, Vec3f* normals) {
  for (int l = 0; l < kLanes && x0 + l < a.width; ++l) vertices[l] = normals[l] = invalid_vec3();
  const VolumeGrid& g = a.grid;
  const Rigid& r = a.camera_to_world;
  MarchLanes m;
  const float start[3] = {r.t[0] - g.origin.x, r.t[1] - g.origin.y, r.t[2] - g.origin.z};
  const float size[3] = {g.size.x, g.size.y, g.size.z};
  const __m256 x = _mm256_cvtepi32_ps(iota(x0));
  const __m256 rx = _mm256_div_ps(_mm256_sub_ps(x, set(a.cx)), set(a.fx));
  const __m256 ry = set((static_cast<float>(y) - a.cy) / a.fy);
  __m256 dir[3];
  for (int k = 0; k < 3; ++k)  // Rigid::rotate of (rx, ry, 1)
    dir[k] = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(set(r.r[3 * k]), rx), _mm256_mul_ps(set(r.r[3 * k + 1]), ry)),
                           set(r.r[3 * k + 2] * 1.0f));
  const __m256 len = _mm256_sqrt_ps(_mm256_add_ps(
      _mm256_add_ps(_mm256_mul_ps(dir[0], dir[0]), _mm256_mul_ps(dir[1], dir[1])), _mm256_mul_ps(dir[2], dir[2])));
  const __m256 zero = _mm256_setzero_ps();
  __m256 t_enter = zero, t_exit = zero;
  for (int k = 0; k < 3; ++k) {
    const __m256 unit = _mm256_div_ps(dir[k], len);
    m.dir[k] = _mm256_blendv_ps(unit, set(1e-15f), _mm256_cmp_ps(unit, zero, _CMP_EQ_OQ));
    m.start[k] = set(start[k]);
    const __m256 ascending = _mm256_cmp_ps(m.dir[k], zero, _CMP_GT_OQ);
    const __m256 near = _mm256_blendv_ps(set(size[k]), zero, ascending),
                 far = _mm256_blendv_ps(zero, set(size[k]), ascending);
    const __m256 t0 = _mm256_div_ps(_mm256_sub_ps(near, m.start[k]), m.dir[k]);
    const __m256 t1 = _mm256_div_ps(_mm256_sub_ps(far, m.start[k]), m.dir[k]);
    t_enter = k == 0 ? t0 : max_number_lanes(t_enter, t0);
    t_exit = k == 0 ? t1 : min_number_lanes(t_exit, t1);
  }
  m.t = max_number_lanes(t_enter, zero);
  const __m256 in_row = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(a.width), iota(x0)));
  m.started = _mm256_and_ps(in_row, _mm256_cmp_ps(m.t, t_exit, _CMP_LT_OQ));
  // entry_tsdf: the floor voxel at the entry, clamped into the grid
  __m256 cell[3];
  for (int k = 0; k < 3; ++k) {
    const __m256 p = _mm256_add_ps(m.start[k], _mm256_mul_ps(m.t, m.dir[k]));
    cell[k] = min_number_lanes(max_number_lanes(_mm256_floor_ps(_mm256_div_ps(p, gl.voxel[k])), zero), gl.last[k]);
  }
  m.tsdf = gather_tsdf(gl.words, gl.index(cell, m.started), m.started);
  return m;
}

/// ray_point in lanes: start + t * dir.
S3D_ALWAYS_INLINE void ray_points(const __m256 start[3], const __m256 dir[3], __m256 t, __m256 q[3]) {
  for (int axis = 0; axis < 3; ++axis) q[axis] = _mm256_add_ps(start[axis], _mm256_mul_ps(t, dir[axis]));
}

/// The first stretch of the march in 8 lanes, through bricks without a negative voxel: while a lane's samples
/// lie in unmarked bricks (and the entry sample is >= 0), they are all >= 0, so none can end the march (a back
/// face needs a sample < 0 before, a surface a sample < 0 after), and the lane counts them off without reading
/// them. It stops before its first sample in a marked brick (or at max_t) and reads the sample at its t, so
/// that the plain march goes on from there with the same t and sample; a lane whose next sample leaves the grid
/// ends (off in `active`), as the plain march does. As in that march, `run` advances in every lane whatever the
/// marks said (one float add a step, the same sums), so that the next step's mark loads do not wait for this
/// step's; each lane keeps the t where it stopped.
S3D_ALWAYS_INLINE void skip_to_the_surface(const GridLanes& gl, const RaycastArgs& a, const MarchLanes& m, __m256& t,
                                           __m256& tsdf, __m256& active) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 step = _mm256_set1_ps(march_step(a.grid)), max_t = _mm256_set1_ps(march_limit(a.grid));
  __m256 skipping = _mm256_andnot_ps(_mm256_cmp_ps(tsdf, zero, _CMP_LT_OQ), active);
  __m256 counted = zero;  // the lanes whose sample at t was counted off
  __m256 run = t;
  for (;;) {
    const __m256 expired = _mm256_andnot_ps(_mm256_cmp_ps(run, max_t, _CMP_LT_OQ), skipping);
    t = _mm256_blendv_ps(t, run, expired);
    skipping = _mm256_andnot_ps(expired, skipping);
    if (_mm256_movemask_ps(skipping) == 0) break;
    const __m256 next = _mm256_add_ps(run, step);
    __m256 q[3], cell[3];
    ray_points(m.start, m.dir, next, q);
    const __m256 inside = gl.sample_cells(q, cell, skipping);
    active = _mm256_andnot_ps(_mm256_andnot_ps(inside, skipping), active);  // sample_cell failed: no hit
    const __m256 free = _mm256_and_ps(
        inside, _mm256_castsi256_ps(_mm256_cmpeq_epi32(gl.brick_mark(cell, inside), _mm256_setzero_si256())));
    t = _mm256_blendv_ps(t, run, _mm256_andnot_ps(free, skipping));  // stopped: before the marked brick
    skipping = free;
    counted = _mm256_or_ps(counted, free);
    run = next;
  }
  counted = _mm256_and_ps(counted, active);
  if (_mm256_movemask_ps(counted) == 0) return;
  __m256 q[3], cell[3];  // the counted-off sample at t, inside the grid
  ray_points(m.start, m.dir, t, q);
  gl.sample_cells(q, cell, counted);
  tsdf = _mm256_blendv_ps(tsdf, gather_tsdf(gl.words, gl.index(cell, counted), counted), counted);
}

/// raycast_pixel for pixels x0 .. x0 + 7 of row y (those below a.width): the 8 marches step together, one gather
/// of the 8 samples' voxels a step, each lane leaving the loop where raycast_pixel's loop ends; the lanes that
/// found a + to - change then refine together. With brick marks (gl.marks), the samples before the first marked
/// brick are counted off first (skip_to_the_surface).
void raycast_group(const GridLanes& gl, const RaycastArgs& a, int x0, int y, Vec3f* vertices, Vec3f* normals) {
  const MarchLanes m = begin_lanes(gl, a, x0, y, vertices, normals);
  if (_mm256_movemask_ps(m.started) == 0) return;
  const float step_length = march_step(a.grid);
  const __m256* start = m.start;
  const __m256* dir = m.dir;
  const __m256 step = _mm256_set1_ps(step_length), max_t = _mm256_set1_ps(march_limit(a.grid));
  const __m256 zero = _mm256_setzero_ps(), started = m.started;
  __m256 t = m.t, tsdf = m.tsdf, active = started;
  __m256 hit = zero, hit_t = zero, hit_q[3] = {zero, zero, zero};
  if (gl.marks != nullptr) skip_to_the_surface(gl, a, m, t, tsdf, active);
  // `t` advances in every lane whatever its samples said, so that the next gather's addresses and mask do not
  // wait for this gather's data and the loads of several steps are in flight together; `active` (the lanes still
  // marching) depends on the samples, but only selects.
  for (;;) {
    const __m256 before_limit = _mm256_cmp_ps(t, max_t, _CMP_LT_OQ);
    active = _mm256_and_ps(active, before_limit);
    if (_mm256_movemask_ps(active) == 0) break;
    const __m256 next = _mm256_add_ps(t, step);
    __m256 q[3], cell[3];
    ray_points(start, dir, next, q);
    const __m256 inside = gl.sample_cells(q, cell, _mm256_and_ps(started, before_limit));
    const __m256 sample = gather_tsdf(gl.words, gl.index(cell, inside), inside);
    active = _mm256_and_ps(active, inside);  // sample_cell failed: the march ends without a hit
    const __m256 back = _mm256_and_ps(_mm256_cmp_ps(tsdf, zero, _CMP_LT_OQ), _mm256_cmp_ps(sample, zero, _CMP_GT_OQ));
    const __m256 front = _mm256_and_ps(
        active, _mm256_and_ps(_mm256_cmp_ps(tsdf, zero, _CMP_GT_OQ), _mm256_cmp_ps(sample, zero, _CMP_LT_OQ)));
    hit = _mm256_or_ps(hit, front);
    hit_t = _mm256_blendv_ps(hit_t, t, front);
    for (int axis = 0; axis < 3; ++axis) hit_q[axis] = _mm256_blendv_ps(hit_q[axis], q[axis], front);
    active = _mm256_andnot_ps(_mm256_or_ps(back, front), active);
    tsdf = _mm256_blendv_ps(tsdf, sample, active);
    t = next;
  }
  if (_mm256_movemask_ps(hit) != 0)
    refine_lanes(gl, a.grid, start, dir, hit_t, step_length, hit_q, hit, vertices, normals);
}

__attribute__((flatten)) void raycast_row_lanes(const Voxel* vol, const BrickMap* bricks, const RaycastArgs& a, int y,
                                                Vec3f* vertices, Vec3f* normals) {
  const GridLanes gl(vol, bricks, a.grid);
  for (int x0 = 0; x0 < a.width; x0 += kLanes) raycast_group(gl, a, x0, y, vertices + x0, normals + x0);
}

}  // namespace
S3D_AVX2_REGION_END

bool raycast_lanes_cpu(const Voxel* vol, const BrickMap* bricks, const RaycastArgs& a, Vec3f* vertices,
                       Vec3f* normals) {
  if (!cpu_avx2_enabled() || a.grid.count() > 0x7fffffffLL) return false;
#pragma omp parallel for schedule(dynamic, 4)
  for (int y = 0; y < a.height; ++y) {
    const std::size_t first = static_cast<std::size_t>(y) * a.width;
    raycast_row_lanes(vol, bricks, a, y, vertices + first, normals + first);
  }
  return true;
}
#else
bool raycast_lanes_cpu(const Voxel*, const BrickMap*, const RaycastArgs&, Vec3f*, Vec3f*) { return false; }
#endif

}  // namespace s3d::fusion::detail
