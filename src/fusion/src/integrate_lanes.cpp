#include "integrate_lanes.hpp"

#include <algorithm>

#include "voxel_lanes.hpp"

namespace s3d::fusion::detail {

#if S3D_AVX2_REGION
// Everything up to the dispatcher is AVX2 code, only ever called where the CPU has it.
S3D_AVX2_REGION_BEGIN
namespace {

using lanes::iota;
using lanes::kLanes;
using lanes::set;
using lanes::tsdf_of_words;

/// color_fuse in the lanes of `lanes` (a movemask), from the lanes' rounded pixel coordinates: integer work on
/// the few voxels near the surface, done one lane at a time as the scalar loop does it.
void fuse_color_lanes(ColorVoxel* colors, long long first_voxel, const std::uint8_t* rgb, int width, int max_weight,
                      int lanes, __m256 ur, __m256 vr) {
  alignas(32) int u[kLanes], v[kLanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(u), _mm256_cvttps_epi32(ur));
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), _mm256_cvttps_epi32(vr));
  for (; lanes != 0; lanes &= lanes - 1) {
    const int l = __builtin_ctz(static_cast<unsigned>(lanes));
    const long long pixel = static_cast<long long>(v[l]) * width + u[l];
    ColorVoxel& c = colors[first_voxel + l];
    c = color_fuse(c, rgb + 3 * pixel, max_weight);
  }
}

/// Voxels (x lanes at px, py, pz), the lanes of `ok` only: tsdf_sample + tsdf_fuse into row[0..7], and
/// color_fuse into color_row[0..7] where it is set and the sample takes colour. The 8 voxels are contiguous.
inline void integrate_row(Voxel* row, ColorVoxel* color_row, const IntegrateArgs& a, const float* depth, int pitch,
                          const std::uint8_t* rgb, __m256 px, float py, float pz, __m256 ok, BrickMap* marks, int i0,
                          int j, int k) {
  const VolumeGrid& g = a.grid;
  const Rigid& m = a.world_to_camera;
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  const __m256 width_last = set(static_cast<float>(a.width - 1)), height_last = set(static_cast<float>(a.height - 1));
  const __m256 scale = set(kTsdfScale);
  const __m256i max_weight = _mm256_set1_epi32(g.max_weight);
  const __m256 vy = set(py), vz = set(pz);
  // c = world_to_camera p (Rigid::apply)
  const auto camera_row = [&](int r) {
    return _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(set(m.r[3 * r]), px), _mm256_mul_ps(set(m.r[3 * r + 1]), vy)),
                      _mm256_mul_ps(set(m.r[3 * r + 2]), vz)),
        set(m.t[r]));
  };
  const __m256 cx = camera_row(0), cy = camera_row(1), cz = camera_row(2);
  ok = _mm256_and_ps(ok, _mm256_cmp_ps(cz, zero, _CMP_GT_OQ));
  const __m256 inv_z = _mm256_div_ps(one, cz);
  const __m256 ur = _mm256_round_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(set(a.fx), cx), inv_z), set(a.cx)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 vr = _mm256_round_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(set(a.fy), cy), inv_z), set(a.cy)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  ok = _mm256_and_ps(
      ok,
      _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(ur, zero, _CMP_GE_OQ), _mm256_cmp_ps(ur, width_last, _CMP_LE_OQ)),
                    _mm256_and_ps(_mm256_cmp_ps(vr, zero, _CMP_GE_OQ), _mm256_cmp_ps(vr, height_last, _CMP_LE_OQ))));
  if (_mm256_movemask_ps(ok) == 0) return;
  const __m256i pixel = _mm256_and_si256(
      _mm256_castps_si256(ok),
      _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(vr), _mm256_set1_epi32(pitch)), _mm256_cvttps_epi32(ur)));
  const __m256 d = _mm256_mask_i32gather_ps(zero, depth, pixel, ok, 4);
  ok = _mm256_and_ps(ok, _mm256_cmp_ps(d, zero, _CMP_GT_OQ));
  const __m256 xn = _mm256_div_ps(_mm256_sub_ps(ur, set(a.cx)), set(a.fx));
  const __m256 yn = _mm256_div_ps(_mm256_sub_ps(vr, set(a.cy)), set(a.fy));
  const __m256 ray_depth =
      _mm256_mul_ps(d, _mm256_sqrt_ps(_mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(xn, xn), _mm256_mul_ps(yn, yn)), one)));
  const __m256 ox = _mm256_sub_ps(px, set(a.camera_centre.x)), oy = _mm256_sub_ps(vy, set(a.camera_centre.y)),
               oz = _mm256_sub_ps(vz, set(a.camera_centre.z));
  const __m256 distance =
      _mm256_sqrt_ps(_mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(ox, ox), _mm256_mul_ps(oy, oy)), _mm256_mul_ps(oz, oz)));
  const __m256 sdf = _mm256_sub_ps(ray_depth, distance);
  // truncation_at: min_ps(a, b) is a < b ? a : b
  const __m256 mu = _mm256_min_ps(_mm256_add_ps(set(g.truncation), _mm256_mul_ps(set(g.truncation_growth), d)),
                                  set(g.truncation_cap));
  ok = _mm256_and_ps(ok, _mm256_cmp_ps(sdf, _mm256_sub_ps(zero, mu), _CMP_GE_OQ));
  if (_mm256_movemask_ps(ok) == 0) return;
  const __m256 ratio = _mm256_div_ps(sdf, mu);
  const __m256 tsdf = _mm256_blendv_ps(one, ratio, _mm256_cmp_ps(ratio, one, _CMP_LT_OQ));
  // tsdf_fuse on the 8 stored words {int16 tsdf, int16 weight}
  int* words = reinterpret_cast<int*>(row);
  const __m256i mask = _mm256_castps_si256(ok);
  const __m256i word = _mm256_maskload_epi32(words, mask);
  const __m256i w = _mm256_srai_epi32(word, 16);
  const __m256 stored = tsdf_of_words(word);
  const __m256i w1 = _mm256_add_epi32(w, _mm256_set1_epi32(1));
  const __m256 fused =
      _mm256_div_ps(_mm256_add_ps(_mm256_mul_ps(stored, _mm256_cvtepi32_ps(w)), tsdf), _mm256_cvtepi32_ps(w1));
  __m256 s = _mm256_round_ps(_mm256_mul_ps(fused, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 low = set(-kTsdfScale);
  s = _mm256_blendv_ps(low, s, _mm256_cmp_ps(s, low, _CMP_GE_OQ));  // !(s >= -scale): -scale (NaN too)
  s = _mm256_blendv_ps(s, scale, _mm256_cmp_ps(s, scale, _CMP_GT_OQ));
  const __m256i weight = _mm256_min_epi32(w1, max_weight);
  const __m256i out = _mm256_or_si256(_mm256_slli_epi32(weight, 16),
                                      _mm256_and_si256(_mm256_cvttps_epi32(s), _mm256_set1_epi32(0xffff)));
  _mm256_maskstore_epi32(words, mask, out);
  if (marks != nullptr) {  // the bricks of the voxels now stored negative (s is a whole number or -0), once each
    int negative = _mm256_movemask_ps(_mm256_and_ps(ok, _mm256_cmp_ps(s, zero, _CMP_LT_OQ)));
    while (negative != 0) {
      const int i = i0 + __builtin_ctz(static_cast<unsigned>(negative));
      marks->mark(i, j, k);
      const int next_brick = ((i >> marks->shift()) + 1) << marks->shift();  // lanes before it: this brick
      negative &= next_brick - i0 >= kLanes ? 0 : -(1 << (next_brick - i0));
    }
  }
  if (color_row != nullptr) {
    const int takes = _mm256_movemask_ps(_mm256_and_ps(ok, _mm256_cmp_ps(tsdf, one, _CMP_LT_OQ)));
    if (takes != 0) fuse_color_lanes(color_row, 0, rgb, a.width, g.max_weight, takes, ur, vr);
  }
}

/// The x centres of voxels i0 .. i0 + 7 (VolumeGrid::centre's expression).
inline __m256 centres_x(const VolumeGrid& g, int i0) {
  return _mm256_add_ps(set(g.origin.x),
                       _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(iota(i0)), set(0.5f)), set(g.voxel.x)));
}

/// Groups of 8 columns in a row of the largest volume (VolumeParams: at most 4096 voxels an axis).
constexpr int kMaxGroups = 4096 / kLanes;

/// The z ranges of columns (i0 .. i0 + 7, j) as lane masks: lanes whose column_range holds k are on at k.
struct GroupRange {
  __m256i first, last;
  int k_begin, k_end;  ///< the union of the lanes' ranges; k_begin > k_end: none
};

inline GroupRange group_range(const IntegrateArgs& a, int i0, int j) {
  const VolumeGrid& g = a.grid;
  alignas(32) int first[kLanes], last[kLanes];
  GroupRange r{};
  r.k_begin = g.nz;
  r.k_end = -1;
  for (int l = 0; l < kLanes; ++l) {
    first[l] = 1;
    last[l] = 0;  // empty
    if (i0 + l < g.nx && column_range(a, i0 + l, j, first[l], last[l])) {
      r.k_begin = std::min(r.k_begin, first[l]);
      r.k_end = std::max(r.k_end, last[l]);
    }
  }
  r.first = _mm256_load_si256(reinterpret_cast<const __m256i*>(first));
  r.last = _mm256_load_si256(reinterpret_cast<const __m256i*>(last));
  return r;
}

/// Slab j (every voxel (i, j, k)): integrate_row in each group's lanes whose column_range holds k, k outermost
/// and x innermost, so that the rows of one k follow each other in memory (x is the fastest axis). Going down
/// each column instead jumps a whole x-y plane from row to row: a new page, and half a cache line used.
void integrate_slab(Voxel* vol, ColorVoxel* colors, const IntegrateArgs& a, const float* depth, int pitch,
                    const std::uint8_t* rgb, int j, GroupRange* ranges, BrickMap* marks,
                    const IntegrateCulling* culling) {
  const VolumeGrid& g = a.grid;
  const int groups = (g.nx + kLanes - 1) / kLanes;
  int k_begin = g.nz, k_end = -1;
  for (int group = 0; group < groups; ++group) {
    ranges[group] = group_range(a, group * kLanes, j);
    k_begin = std::min(k_begin, ranges[group].k_begin);
    k_end = std::max(k_end, ranges[group].k_end);
  }
  const float py = g.origin.y + (static_cast<float>(j) + 0.5f) * g.voxel.y;
  const long long plane = static_cast<long long>(g.nx) * g.ny;
  for (int k = k_begin; k <= k_end; ++k) {
    const __m256i kk = _mm256_set1_epi32(k);
    const float pz = g.origin.z + (static_cast<float>(k) + 0.5f) * g.voxel.z;
    for (int group = 0; group < groups; ++group) {
      const GroupRange& r = ranges[group];
      if (k < r.k_begin || k > r.k_end) continue;
      if (culling != nullptr && culling->culled(group * kLanes, j, k)) continue;
      const __m256 ok = _mm256_castsi256_ps(_mm256_andnot_si256(
          _mm256_or_si256(_mm256_cmpgt_epi32(r.first, kk), _mm256_cmpgt_epi32(kk, r.last)), _mm256_set1_epi32(-1)));
      const int i0 = group * kLanes;
      const long long first_voxel = i0 + g.nx * static_cast<long long>(j) + plane * k;
      integrate_row(vol + first_voxel, colors != nullptr ? colors + first_voxel : nullptr, a, depth, pitch, rgb,
                    centres_x(g, i0), py, pz, ok, marks, i0, j, k);
    }
  }
}

/// Block (i0.., j0.., k0..) of 8^3 voxels, x fastest: integrate_row on each of its 64 rows, every lane.
void integrate_block(Voxel* voxels, ColorVoxel* colors, const IntegrateArgs& a, const float* depth, int pitch,
                     const std::uint8_t* rgb, int i0, int j0, int k0) {
  const VolumeGrid& g = a.grid;
  const __m256 px = centres_x(g, i0);
  const __m256 all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  for (int z = 0; z < kLanes; ++z) {
    const float pz = g.origin.z + (static_cast<float>(k0 + z) + 0.5f) * g.voxel.z;
    for (int y = 0; y < kLanes; ++y) {
      const float py = g.origin.y + (static_cast<float>(j0 + y) + 0.5f) * g.voxel.y;
      const int row = kLanes * (y + kLanes * z);
      integrate_row(voxels + row, colors != nullptr ? colors + row : nullptr, a, depth, pitch, rgb, px, py, pz, all,
                    nullptr, 0, 0, 0);
    }
  }
}

}  // namespace
S3D_AVX2_REGION_END

bool integrate_lanes_cpu(Voxel* vol, ColorVoxel* colors, const IntegrateArgs& a, const float* depth, long long pitch,
                         const std::uint8_t* rgb, BrickMap* marks, IntegrateCulling* culling) {
  const VolumeGrid& g = a.grid;
  if (!cpu_avx2_enabled() || g.count() > 0x7fffffffLL || pitch * a.height > 0x7fffffffLL) return false;
  const int groups = (g.nx + kLanes - 1) / kLanes;
  if (groups > kMaxGroups) return false;
  if (culling != nullptr) culling->update(a, depth, pitch);
#pragma omp parallel for schedule(dynamic, 2)
  for (int j = 0; j < g.ny; ++j) {
    GroupRange ranges[kMaxGroups];  // the slab's, on the thread's stack (48 KiB)
    integrate_slab(vol, colors, a, depth, static_cast<int>(pitch), rgb, j, ranges, marks, culling);
  }
  return true;
}
bool integrate_block_lanes_cpu(Voxel* voxels, ColorVoxel* colors, const IntegrateArgs& a, const float* depth,
                               long long pitch, const std::uint8_t* rgb, int i0, int j0, int k0) {
  if (!cpu_avx2_enabled() || pitch * a.height > 0x7fffffffLL) return false;
  integrate_block(voxels, colors, a, depth, static_cast<int>(pitch), rgb, i0, j0, k0);
  return true;
}
#else
bool integrate_lanes_cpu(Voxel*, ColorVoxel*, const IntegrateArgs&, const float*, long long, const std::uint8_t*,
                         BrickMap*, IntegrateCulling*) {
  return false;
}
bool integrate_block_lanes_cpu(Voxel*, ColorVoxel*, const IntegrateArgs&, const float*, long long, const std::uint8_t*,
                               int, int, int) {
  return false;
}
#endif

}  // namespace s3d::fusion::detail
