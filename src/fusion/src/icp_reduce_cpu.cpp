// Tracking, CPU: the ICP reduction, reproducing the CUDA kernel's tree step by step (tracking_math.hpp):
// per-thread float sums, the warp trees, the 8-group tree, then the tiles in double with the same trees.
// The per-thread sums of a tile are computed for the 256 threads side by side (one vectorised loop per pixel
// of a thread), with icp_project and icp_accumulate's tests turned into selects: a rejected pixel adds +0,
// which leaves a sum unchanged (a sum that starts at +0 is never -0), so the bits are icp_thread_sum's.
#include <algorithm>
#include <vector>

#include "s3d/core/cpu_dispatch.hpp"
#include "tracking_common.hpp"
#include "tracking_cpu.hpp"

namespace s3d::fusion::detail {
namespace {

/// The block tree over 256 per-thread values (modified in place), as the kernel leaves it in thread 0.
template <typename T>
T block_tree(T* v) {
  T groups[kReduceThreads / 32];
  for (int g = 0; g < kReduceThreads / 32; ++g) groups[g] = warp_tree(v + 32 * g);
  return tree8(groups);
}

/// round_rn for |v| < 2^22 with basic operations (adding and removing 1.5 * 2^23 rounds to nearest, ties to
/// even, in the default rounding mode), kept in float so that the loop vectorises without SSE4.1.
S3D_ALWAYS_INLINE float round_small(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}

/// add_weighted_row for one lane of the term-major thread sums (`lane`: term k at lane[k * kReduceThreads]),
/// the rejected lane adding +0 (a select, so that the pixel loop vectorises).
S3D_ALWAYS_INLINE void add_weighted_row_lane(float w, const float* r, float b, int ok, float* lane) {
  int t = 0;
#pragma GCC unroll 6
  for (int a = 0; a < 6; ++a) {
    const float wr = w * r[a];
#pragma GCC unroll 6
    for (int c = a; c < 6; ++c, ++t) {
      const float term = wr * r[c];
      lane[t * kReduceThreads] += ok ? term : 0.0f;
    }
  }
#pragma GCC unroll 6
  for (int a = 0; a < 6; ++a) {
    const float term = (w * r[a]) * b;
    lane[(21 + a) * kReduceThreads] += ok ? term : 0.0f;
  }
}

/// The kIcpTerms sums of `tile` (block_tree over its 256 thread sums) into `sums`; kPhotometric: with
/// icp_accumulate's photometric term (photometric_row with selects).
template <bool kPhotometric>
S3D_ALWAYS_INLINE void icp_tile_body(const IcpInputs& in, int tile, float* sums) {
  // Thread sums, term-major. A local array: the compiler sees that the stores do not alias the maps.
  float acc[kIcpTerms * kReduceThreads];
  const Vec3f* cur_v = in.cur_v;
  const Vec3f* cur_n = in.cur_n;
  // The reference maps as floats: a gather needs a base and an int index (x, y, z at 3 i + 0, 1, 2).
  const float* ref_v = &in.ref_v->x;
  const float* ref_n = &in.ref_n->x;
  const Rigid estimate = in.estimate, to_ref = in.world_to_reference;
  const Pinhole cam = in.camera;
  const int rw = in.ref_width, rh = in.ref_height;
  const float fw = static_cast<float>(rw), fh = static_cast<float>(rh);
  const float gate2 = in.distance_gate2, sin2 = in.sin_angle2, huber = in.huber_delta, gate_sigmas = in.gate_sigmas;
  const int noise = in.noise_weighting;
  const NoiseModel noise_model = in.noise;
  const float model_variance = in.model_variance;
  const float* cur_i = in.cur_i;
  const float *ref_i = in.ref_i, *ref_gx = in.ref_gx, *ref_gy = in.ref_gy;
  const float photometric_weight = in.photometric_weight;
  std::fill(acc, acc + kIcpTerms * kReduceThreads, 0.0f);
  for (int k = 0; k < kPixelsPerThread; ++k) {
    const int base = tile * kTilePixels + k * kReduceThreads;
    const int n = std::min(kReduceThreads, in.cur_pixels - base);
    for (int j = 0; j < n; ++j) {
      const Vec3f v = cur_v[base + j], nv = cur_n[base + j];
      // icp_project
      const Vec3f s = estimate.apply(v), ns = estimate.rotate(nv);
      const Vec3f p = to_ref.apply(s);
      const float uf = div_rn(cam.fx * p.x, p.z) + cam.cx;
      const float vf = div_rn(cam.fy * p.y, p.z) + cam.cy;
      // & rather than &&, an int rather than a bool: no branches, one mask width (the loop vectorises).
      int ok = is_valid(v) & is_valid(nv) & (p.z > 0.0f) & (uf > -1.0f) & (uf < fw) & (vf > -1.0f) & (vf < fh);
      // The rounding and its tests in float, like all the other tests, so that every mask has the same width
      // (GCC vectorises no mix of int and float masks); outside (-1, w) the rounding may be off, but such a
      // pixel is rejected already, and only an accepted one converts to int.
      const float ur = round_small(uf), vr = round_small(vf);
      ok = ok & (ur >= 0.0f) & (ur < fw) & (vr >= 0.0f) & (vr < fh);
      const int r3 = 3 * (static_cast<int>(ok ? vr : 0.0f) * rw + static_cast<int>(ok ? ur : 0.0f));
      const Vec3f d{ref_v[r3], ref_v[r3 + 1], ref_v[r3 + 2]}, nr{ref_n[r3], ref_n[r3 + 1], ref_n[r3 + 2]};
      const Vec3f diff = d - s;
      const float sigma = depth_sigma(noise_model, v.z);  // distance_gate2_at and depth_noise_weight, inlined
      const float g = gate_sigmas * sigma;
      const float point_gate2 = (g * g) > gate2 ? g * g : gate2;
      const int near = ok & is_valid(d) & !(squared_norm(diff) > point_gate2);
      ok = near & is_valid(nr) & (squared_norm(cross(ns, nr)) < sin2);
      const Vec3f sn = cross(s, nr);
      const float r[6] = {sn.x, sn.y, sn.z, nr.x, nr.y, nr.z};
      const float b = dot(nr, diff);
      const float ab = fabsf(b);
      // Every operation evaluated unconditionally, selects after (GCC does not if-convert a conditional
      // operation that might trap).
      const float huber_weight = div_rn(huber, ab);
      const float robust_weight = (huber > 0.0f) & (ab > huber) ? huber_weight : 1.0f;
      const float noise_weight = div_rn(noise_model.norm, sigma * sigma + model_variance);
      const float weight = noise ? robust_weight * noise_weight : robust_weight;
      add_weighted_row_lane(weight, r, b, ok, acc + j);
      const float b2 = b * b;
      acc[27 * kReduceThreads + j] += ok ? b2 : 0.0f;
      acc[28 * kReduceThreads + j] += ok ? 1.0f : 0.0f;
      if constexpr (kPhotometric) {
        // photometric_row: p, uf and vf are the association's (the same expressions).
        const int okp = near & (uf >= 1.0f) & (uf < fw - 2.0f) & (vf >= 1.0f) & (vf < fh - 2.0f);
        const float us = okp ? uf : 1.0f, vs = okp ? vf : 1.0f;
        const int x0 = static_cast<int>(us), y0 = static_cast<int>(vs);
        const float ax = us - static_cast<float>(x0), ay = vs - static_cast<float>(y0);
        const float bx = 1.0f - ax, by = 1.0f - ay;
        const int i00 = y0 * rw + x0, i01 = i00 + rw;
        const float grey =
            (by * ((bx * ref_i[i00]) + (ax * ref_i[i00 + 1]))) + (ay * ((bx * ref_i[i01]) + (ax * ref_i[i01 + 1])));
        const float gx =
            (by * ((bx * ref_gx[i00]) + (ax * ref_gx[i00 + 1]))) + (ay * ((bx * ref_gx[i01]) + (ax * ref_gx[i01 + 1])));
        const float gy =
            (by * ((bx * ref_gy[i00]) + (ax * ref_gy[i00 + 1]))) + (ay * ((bx * ref_gy[i01]) + (ax * ref_gy[i01 + 1])));
        const float inv_z = div_rn(1.0f, p.z);
        const float qx = (gx * cam.fx) * inv_z, qy = (gy * cam.fy) * inv_z;
        const float qz = -((qx * p.x) + (qy * p.y)) * inv_z;
        const float* m = to_ref.r;
        const Vec3f w{((m[0] * qx) + (m[3] * qy)) + (m[6] * qz), ((m[1] * qx) + (m[4] * qy)) + (m[7] * qz),
                      ((m[2] * qx) + (m[5] * qy)) + (m[8] * qz)};
        const Vec3f sw = cross(s, w);
        const float rp[6] = {sw.x, sw.y, sw.z, w.x, w.y, w.z};
        const float bp = cur_i[base + j] - grey;
        const float abp = fabsf(bp);
        const float huber_p = photometric_weight * div_rn(kPhotometricHuber, abp);
        const float pw = abp > kPhotometricHuber ? huber_p : photometric_weight;
        add_weighted_row_lane(pw, rp, bp, okp, acc + j);
      }
    }
  }
  for (int k = 0; k < kIcpTerms; ++k) sums[k] = block_tree(acc + k * kReduceThreads);
}

template <bool kPhotometric>
void icp_tile_baseline(const IcpInputs& in, int tile, float* sums) {
  icp_tile_body<kPhotometric>(in, tile, sums);
}

template <bool kPhotometric>
S3D_TARGET_AVX2 void icp_tile_avx2(const IcpInputs& in, int tile, float* sums) {
  icp_tile_body<kPhotometric>(in, tile, sums);
}

}  // namespace

void icp_reduce_cpu(const IcpInputs& in, double* out) {
  const int tiles = icp_tiles(in.cur_pixels);
  const bool photometric = in.photometric_weight > 0.0f;
  const auto tile_sums_of = cpu_avx2_enabled() ? (photometric ? icp_tile_avx2<true> : icp_tile_avx2<false>)
                                               : (photometric ? icp_tile_baseline<true> : icp_tile_baseline<false>);
  // Tile sums, term-major like the kernel's buffer.
  std::vector<float> tile_sums(static_cast<std::size_t>(kIcpTerms) * tiles);
#pragma omp parallel for schedule(static)
  for (int t = 0; t < tiles; ++t) {
    float sums[kIcpTerms];
    tile_sums_of(in, t, sums);
    for (int k = 0; k < kIcpTerms; ++k) tile_sums[static_cast<std::size_t>(k) * tiles + t] = sums[k];
  }
  for (int k = 0; k < kIcpTerms; ++k) {
    double partial[kReduceThreads];
    for (int j = 0; j < kReduceThreads; ++j) {
      double s = 0.0;
      for (int t = j; t < tiles; t += kReduceThreads)
        s += static_cast<double>(tile_sums[static_cast<std::size_t>(k) * tiles + t]);
      partial[j] = s;
    }
    out[k] = block_tree(partial);
  }
}

}  // namespace s3d::fusion::detail
