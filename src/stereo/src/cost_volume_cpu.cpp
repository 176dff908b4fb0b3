// Matching cost volume, CPU backend: cost(x, y, d) = popcount(census_ref ^ census_target) as uint8, layout
// [y][x][d]; targets outside the image cost max_cost. The row loop is compiled for AVX-512 (VPOPCNTDQ),
// POPCNT and baseline x86-64 and picked at run time (every variant gives the same bytes).
#include <algorithm>
#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "aggregate_math.hpp"
#include "aggregate_sweep_cpu.hpp"
#include "backend.hpp"

namespace s3d::stereo::detail::cpu {

__attribute__((always_inline)) static inline void cost_row_impl(const std::uint64_t* __restrict ref,
                                                                const std::uint64_t* __restrict target, int W, int D,
                                                                int min_d, int sign, int max_cost,
                                                                std::uint8_t* __restrict out) {
  for (int x = 0; x < W; ++x) {
    const std::uint64_t r = ref[x];
    std::uint8_t* c = out + static_cast<std::ptrdiff_t>(x) * D;
    // target column x + sign*(min_d + d): inside for d in [lo, hi)
    int lo, hi;
    if (sign < 0) {  // xt = x - min_d - d in [0, W)  <=>  d in (x - min_d - W, x - min_d]
      lo = x - min_d - W + 1;
      hi = x - min_d + 1;
    } else {  // xt = x + min_d + d in [0, W)  <=>  d in [-x - min_d, W - x - min_d)
      lo = -x - min_d;
      hi = W - x - min_d;
    }
    lo = std::max(lo, 0);
    hi = std::min(hi, D);
    for (int d = 0; d < std::min(lo, D); ++d) c[d] = static_cast<std::uint8_t>(max_cost);
    for (int d = lo; d < hi; ++d) {
      const int xt = x + sign * (min_d + d);
      c[d] = static_cast<std::uint8_t>(popcount64(r ^ target[xt]));
    }
    for (int d = std::max(hi, lo); d < D; ++d) c[d] = static_cast<std::uint8_t>(max_cost);
  }
}

/// AVX-512: eight costs per step (VPOPCNTQ, then narrowed to bytes); the scalar loop does the rest.
S3D_TARGET("avx512f,avx512vpopcntdq")
static void cost_row_avx512(const std::uint64_t* __restrict ref, const std::uint64_t* __restrict target, int W, int D,
                            int min_d, int sign, int max_cost, std::uint8_t* __restrict out) {
  const __m512i reverse = _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  for (int x = 0; x < W; ++x) {
    const std::uint64_t r = ref[x];
    const __m512i rv = _mm512_set1_epi64(static_cast<long long>(r));
    std::uint8_t* c = out + static_cast<std::ptrdiff_t>(x) * D;
    int lo, hi;
    if (sign < 0) {
      lo = x - min_d - W + 1;
      hi = x - min_d + 1;
    } else {
      lo = -x - min_d;
      hi = W - x - min_d;
    }
    lo = std::max(lo, 0);
    hi = std::min(hi, D);
    for (int d = 0; d < std::min(lo, D); ++d) c[d] = static_cast<std::uint8_t>(max_cost);
    int d = lo;
    if (sign < 0) {
      // targets x - min_d - d, ..., x - min_d - d - 7: load the 8 below and reverse
      for (; d + 8 <= hi; d += 8) {
        const __m512i t = _mm512_loadu_si512(target + (x - min_d - d - 7));
        const __m512i v = _mm512_popcnt_epi64(_mm512_xor_si512(rv, _mm512_permutexvar_epi64(reverse, t)));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(c + d), _mm512_cvtepi64_epi8(v));
      }
    } else {
      for (; d + 8 <= hi; d += 8) {
        const __m512i t = _mm512_loadu_si512(target + (x + min_d + d));
        const __m512i v = _mm512_popcnt_epi64(_mm512_xor_si512(rv, t));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(c + d), _mm512_cvtepi64_epi8(v));
      }
    }
    for (; d < hi; ++d) {
      const int xt = x + sign * (min_d + d);
      c[d] = static_cast<std::uint8_t>(popcount64(r ^ target[xt]));
    }
    for (int e = std::max(hi, lo); e < D; ++e) c[e] = static_cast<std::uint8_t>(max_cost);
  }
}
S3D_TARGET("popcnt")
static void cost_row_popcnt(const std::uint64_t* ref, const std::uint64_t* target, int W, int D, int min_d, int sign,
                            int max_cost, std::uint8_t* out) {
  cost_row_impl(ref, target, W, D, min_d, sign, max_cost, out);
}
static void cost_row_base(const std::uint64_t* ref, const std::uint64_t* target, int W, int D, int min_d, int sign,
                          int max_cost, std::uint8_t* out) {
  cost_row_impl(ref, target, W, D, min_d, sign, max_cost, out);
}
using CostRowFn = void (*)(const std::uint64_t*, const std::uint64_t*, int, int, int, int, int, std::uint8_t*);
static CostRowFn pick_cost_row() {
#if S3D_AGG_DISPATCH
  __builtin_cpu_init();
  const int cap = cpu_isa_cap();
  if (cap >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq"))
    return cost_row_avx512;
  if (cap >= 1 && __builtin_cpu_supports("popcnt")) return cost_row_popcnt;
#endif
  return cost_row_base;
}
static void cost_row(const std::uint64_t* ref, const std::uint64_t* target, int W, int D, int min_d, int sign,
                     int max_cost, std::uint8_t* out) {
  static const CostRowFn fn = pick_cost_row();
  fn(ref, target, W, D, min_d, sign, max_cost, out);
}

void cost_volume(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint8_t* cost) {
  const int W = s.width;
  const int D = s.disparities;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < s.height; ++y) {
    const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(y) * W;
    cost_row(ref + o, target + o, W, D, s.min_disparity, s.sign, s.max_cost, cost + o * D);
  }
}

}  // namespace s3d::stereo::detail::cpu
