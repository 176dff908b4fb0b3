// SGM path aggregation, CPU backend: the AVX-512 sweep for byte rows and D = 64, 128 or 256 (selected by
// aggregate_sweep_cpu.cpp through avx512_byte_sweep()). Built as plain functions with target attributes, so
// the file compiles everywhere and runs only where the CPU has AVX-512 BW + VBMI.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "aggregate_sweep_cpu.hpp"
#include "backend.hpp"
#include "wta_cpu.hpp"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

#if S3D_AGG_DISPATCH
// AVX-512 (BW + VBMI) sweep for byte rows (use_byte_rows()) and D = 64 * NV: the same recurrence, the same
// planes and the same order of pixels as sweep_impl<std::uint8_t, D>, written with intrinsics:
//  * the horizontal path stays in registers (its neighbours d +- 1 by byte permutes across the NV vectors,
//    the sentinel 0xff shifted in at both ends): no store and reload of the previous pixel's row on the
//    critical path of the row;
//  * each path's minimum is reduced inside the vector unit;
//  * the second sweep at a row adds the first sweep's stored sums and takes the winner pixel by pixel
//    (least sum, then its lowest d by a compare mask), no row buffer and no second pass over the row.
// Byte arithmetic is exact here for the reasons given at the byte path_step_row(): every value and the
// decisions are those of the scalar code.
#define S3D_AVX512_BYTES S3D_TARGET("avx512f,avx512bw,avx512vl,avx512vbmi")

/// Every byte = the least byte of x.
S3D_AVX512_BYTES inline __m512i splat_min_u8(__m512i x) {
  x = _mm512_min_epu8(x, _mm512_shuffle_i64x2(x, x, 0x4E));
  x = _mm512_min_epu8(x, _mm512_shuffle_i64x2(x, x, 0xB1));
  x = _mm512_min_epu8(x, _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0x4E)));
  x = _mm512_min_epu8(x, _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xB1)));
  x = _mm512_min_epu8(x, _mm512_ror_epi32(x, 16));
  return _mm512_min_epu8(x, _mm512_ror_epi32(x, 8));
}
/// Every 16-bit lane = the least lane of x.
S3D_AVX512_BYTES inline __m512i splat_min_u16(__m512i x) {
  x = _mm512_min_epu16(x, _mm512_shuffle_i64x2(x, x, 0x4E));
  x = _mm512_min_epu16(x, _mm512_shuffle_i64x2(x, x, 0xB1));
  x = _mm512_min_epu16(x, _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0x4E)));
  x = _mm512_min_epu16(x, _mm512_shuffle_epi32(x, static_cast<_MM_PERM_ENUM>(0xB1)));
  return _mm512_min_epu16(x, _mm512_ror_epi32(x, 16));
}
S3D_AVX512_BYTES inline int low_byte(__m512i x) { return _mm_cvtsi128_si32(_mm512_castsi512_si128(x)) & 0xff; }

/// Minima of up to 8 pixels' paths at once (each v[i] reduced over its 64 bytes, written to *dst[i]): a
/// transposed reduction, about 4 vector operations per pixel instead of 12 for splat_min_u8().
struct PendingMins {
  __m512i v[8];
  int* dst[8];
  int n = 0;
};
S3D_AVX512_BYTES inline void flush_mins(PendingMins& p) {
  if (p.n == 0) return;
  const __m512i ones = _mm512_set1_epi8(-1);
  for (int i = p.n; i < 8; ++i) p.v[i] = ones;
  __m512i h[4], q[2];
  for (int i = 0; i < 4; ++i)  // 128-bit lanes: [v2i 2 halves, v2i+1 2 halves]
    h[i] = _mm512_min_epu8(_mm512_shuffle_i64x2(p.v[2 * i], p.v[2 * i + 1], 0x44),
                           _mm512_shuffle_i64x2(p.v[2 * i], p.v[2 * i + 1], 0xEE));
  for (int i = 0; i < 2; ++i)  // one 128-bit lane per pixel: [v4i, v4i+1, v4i+2, v4i+3]
    q[i] = _mm512_min_epu8(_mm512_shuffle_i64x2(h[2 * i], h[2 * i + 1], 0x88),
                           _mm512_shuffle_i64x2(h[2 * i], h[2 * i + 1], 0xDD));
  // lane i: qword 0 = pixel i, qword 1 = pixel 4 + i
  __m512i x = _mm512_min_epu8(_mm512_unpacklo_epi64(q[0], q[1]), _mm512_unpackhi_epi64(q[0], q[1]));
  x = _mm512_min_epu8(x, _mm512_srli_epi64(x, 32));
  x = _mm512_min_epu8(x, _mm512_srli_epi64(x, 16));
  x = _mm512_min_epu8(x, _mm512_srli_epi64(x, 8));
  alignas(64) std::uint8_t m[64];
  _mm512_store_si512(m, x);
  for (int i = 0; i < p.n; ++i) *p.dst[i] = m[(i & 3) * 16 + (i >> 2) * 8];
  p.n = 0;
}
S3D_AVX512_BYTES inline void defer_min(PendingMins& p, __m512i v, int* dst) {
  p.v[p.n] = v;
  p.dst[p.n] = dst;
  if (++p.n == 8) flush_mins(p);
}

/// One path step from a row in memory (prev[-1] and prev[D] hold 0xff): l = L(p, .), stored to cur too.
/// Returns the lane-wise minimum of l (not yet reduced).
template <int NV>
S3D_AVX512_BYTES inline __m512i step_mem(const std::uint8_t* __restrict c, const std::uint8_t* __restrict prev,
                                         int prev_min, std::uint8_t* __restrict cur, __m512i p1v, __m512i p2mp1,
                                         __m512i* l) {
  const __m512i pm = _mm512_set1_epi8(static_cast<char>(prev_min));
  const __m512i jump_m = _mm512_add_epi8(pm, p2mp1);
  __m512i mn = _mm512_set1_epi8(-1);
  for (int k = 0; k < NV; ++k) {
    const __m512i dn = _mm512_loadu_si512(prev + 64 * k - 1);
    const __m512i up = _mm512_loadu_si512(prev + 64 * k + 1);
    const __m512i pv = _mm512_loadu_si512(prev + 64 * k);
    const __m512i m = _mm512_add_epi8(_mm512_min_epu8(_mm512_min_epu8(dn, up), jump_m), p1v);
    const __m512i v = _mm512_min_epu8(pv, m);
    l[k] = _mm512_add_epi8(_mm512_loadu_si512(c + 64 * k), _mm512_sub_epi8(v, pm));
    _mm512_storeu_si512(cur + 64 * k, l[k]);
    mn = _mm512_min_epu8(mn, l[k]);
  }
  return mn;
}
/// First pixel of a path in memory: L = C.
template <int NV>
S3D_AVX512_BYTES inline __m512i start_mem(const std::uint8_t* __restrict c, std::uint8_t* __restrict cur, __m512i* l) {
  __m512i mn = _mm512_set1_epi8(-1);
  for (int k = 0; k < NV; ++k) {
    l[k] = _mm512_loadu_si512(c + 64 * k);
    _mm512_storeu_si512(cur + 64 * k, l[k]);
    mn = _mm512_min_epu8(mn, l[k]);
  }
  return mn;
}

template <int NV>
S3D_AVX512_BYTES void sweep_bytes_avx512(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx,
                                         std::uint16_t* out, SweepBuffers& b, Meet* meet) {
  constexpr int D = 64 * NV;
  std::vector<std::uint8_t>& rows = b.rows8;
  const int W = s.width, H = s.height;
  const int stride = D + 2;
  const int np = s.paths == 8 ? 3 : 1;
  const std::size_t plane = static_cast<std::size_t>(np == 3 ? np + 2 : np + 1) * W * stride;
  if (rows.size() < plane) rows.resize(plane);
  for (std::size_t k = 0; k < plane; k += stride) {
    rows[k] = 0xff;
    rows[k + stride - 1] = 0xff;
  }
  b.mins.resize(static_cast<std::size_t>(np + 1) * W);
  const __m512i ones = _mm512_set1_epi8(-1);
  const __m512i p1v = _mm512_set1_epi8(static_cast<char>(s.p1));
  const __m512i p2mp1 = _mm512_set1_epi8(static_cast<char>(s.p2 - s.p1));
  alignas(64) std::uint8_t idn[64], iup[64];
  for (int i = 0; i < 64; ++i) {
    idn[i] = static_cast<std::uint8_t>(i == 0 ? 63 : 64 + i - 1);  // byte i-1 of this vector, byte 63 of the one before
    iup[i] = static_cast<std::uint8_t>(i == 63 ? 64 : i + 1);      // byte i+1 of this vector, byte 0 of the next
  }
  const __m512i idx_dn = _mm512_load_si512(idn), idx_up = _mm512_load_si512(iup);
  const int sx = hdx > 0 ? 1 : -1;
  const int k_direct = sx > 0 ? 2 : 1;
  const int k_delayed = sx > 0 ? 1 : 2;
  // Path minima are reduced eight at a time; each is read only by the next row, or (the in-place diagonal)
  // by a pixel visited later that reads the minimum of a pixel not yet visited in this row.
  PendingMins pending;
  for (int i = 0; i < H; ++i) {
    const int y = dy > 0 ? i : H - 1 - i;
    const std::uint8_t* crow = cost + static_cast<std::ptrdiff_t>(y) * W * D;
    bool first = true;
    if (meet) first = meet->arrivals[y].fetch_add(1, std::memory_order_acq_rel) == 0;
    std::uint16_t* orow = (meet ? meet->volume : out) + static_cast<std::ptrdiff_t>(y) * W * D;
    if (meet && !first)  // the first sweep's sums of this row are needed pixel by pixel
      while (meet->stored[y].load(std::memory_order_acquire) == 0) std::this_thread::yield();
    float* disp_row = meet ? meet->disparity + static_cast<std::ptrdiff_t>(y) * W : nullptr;
    float* conf_row = meet && meet->confidence ? meet->confidence + static_cast<std::ptrdiff_t>(y) * W : nullptr;
    const RightRow right = meet && !first ? start_right_row(*meet, s, b) : RightRow{};
    __m512i h[NV], hmin = _mm512_setzero_si512();
    const std::size_t vcur = (i & 1) ? static_cast<std::size_t>(np) * W : 0;
    const std::size_t vprev = (i & 1) ? 0 : static_cast<std::size_t>(np) * W;
    const std::size_t dcur = (i & 1) ? static_cast<std::size_t>(np + 1) : static_cast<std::size_t>(k_delayed);
    const std::size_t dprev = (i & 1) ? static_cast<std::size_t>(k_delayed) : static_cast<std::size_t>(np + 1);
    int* mdcur = b.mins.data() + ((i & 1) ? static_cast<std::size_t>(np) : static_cast<std::size_t>(k_delayed)) * W;
    const int* mdprev =
        b.mins.data() + ((i & 1) ? static_cast<std::size_t>(k_delayed) : static_cast<std::size_t>(np)) * W;
    for (int j = 0; j < W; ++j) {
      const int x = sx > 0 ? j : W - 1 - j;
      const std::uint8_t* c = crow + static_cast<std::ptrdiff_t>(x) * D;
      // horizontal path, in registers
      if (j == 0) {
        __m512i mn = ones;
        for (int k = 0; k < NV; ++k) {
          h[k] = _mm512_loadu_si512(c + 64 * k);
          mn = _mm512_min_epu8(mn, h[k]);
        }
        hmin = splat_min_u8(mn);
      } else {
        const __m512i jump_m = _mm512_add_epi8(hmin, p2mp1);
        __m512i nh[NV];
        __m512i mn = ones;
        for (int k = 0; k < NV; ++k) {
          const __m512i dn = _mm512_permutex2var_epi8(k > 0 ? h[k - 1] : ones, idx_dn, h[k]);
          const __m512i up = _mm512_permutex2var_epi8(h[k], idx_up, k + 1 < NV ? h[k + 1] : ones);
          const __m512i m = _mm512_add_epi8(_mm512_min_epu8(_mm512_min_epu8(dn, up), jump_m), p1v);
          const __m512i v = _mm512_min_epu8(h[k], m);
          nh[k] = _mm512_add_epi8(_mm512_loadu_si512(c + 64 * k), _mm512_sub_epi8(v, hmin));
          mn = _mm512_min_epu8(mn, nh[k]);
        }
        for (int k = 0; k < NV; ++k) h[k] = nh[k];
        hmin = splat_min_u8(mn);
      }
      // vertical path: planes 0 and np alternate between rows
      __m512i v[NV];
      {
        std::uint8_t* vp = rows.data() + (vcur + x) * stride + 1;
        int* m = b.mins.data() + x;
        defer_min(pending,
                  i == 0 ? start_mem<NV>(c, vp, v)
                         : step_mem<NV>(c, rows.data() + (vprev + x) * stride + 1, *m, vp, p1v, p2mp1, v),
                  m);
      }
      __m512i a[NV], e[NV];
      if (np == 3) {
        // dx = -sx: previous pixel x + sx (not visited yet in this row: still the previous row's)
        {
          std::uint8_t* ap = rows.data() + (static_cast<std::size_t>(k_direct) * W + x) * stride + 1;
          int* m = b.mins.data() + static_cast<std::size_t>(k_direct) * W + x;
          const int xp = x + sx;
          defer_min(pending,
                    i == 0 || xp < 0 || xp >= W
                        ? start_mem<NV>(c, ap, a)
                        : step_mem<NV>(c, rows.data() + (static_cast<std::size_t>(k_direct) * W + xp) * stride + 1,
                                       m[sx], ap, p1v, p2mp1, a),
                    m);
        }
        // dx = +sx: previous pixel x - sx (just visited): planes k_delayed and np + 1 alternate between rows
        {
          std::uint8_t* ep = rows.data() + (dcur * W + x) * stride + 1;
          const int xp = x - sx;
          defer_min(pending,
                    i == 0 || j == 0
                        ? start_mem<NV>(c, ep, e)
                        : step_mem<NV>(c, rows.data() + (dprev * W + xp) * stride + 1, mdprev[xp], ep, p1v, p2mp1, e),
                    mdcur + x);
        }
      }
      // sum of the paths (uint16), stored or added to the first sweep's and the winner taken
      std::uint16_t* o = orow + static_cast<std::ptrdiff_t>(x) * D;
      __m512i sum[2 * NV];
      for (int k = 0; k < NV; ++k) {
        for (int half = 0; half < 2; ++half) {
          __m512i t = _mm512_add_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(h[k], half)),
                                       _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v[k], half)));
          if (np == 3) {
            t = _mm512_add_epi16(t, _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(a[k], half)));
            t = _mm512_add_epi16(t, _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(e[k], half)));
          }
          sum[2 * k + half] = t;
        }
      }
      if (!meet || first) {
        for (int q = 0; q < 2 * NV; ++q) _mm512_storeu_si512(o + 32 * q, sum[q]);
      } else {
        __m512i mn = _mm512_set1_epi16(-1);
        for (int q = 0; q < 2 * NV; ++q) {
          sum[q] = _mm512_add_epi16(sum[q], _mm512_loadu_si512(o + 32 * q));
          _mm512_storeu_si512(o + 32 * q, sum[q]);  // the totals replace the first sweep's sums
          mn = _mm512_min_epu16(mn, sum[q]);
        }
        mn = splat_min_u16(mn);
        int best = 0;
        for (int q = 0; q < 2 * NV; ++q) {
          const __mmask32 eq = _mm512_cmpeq_epi16_mask(sum[q], mn);
          if (eq) {
            best = 32 * q + __builtin_ctz(static_cast<unsigned>(eq));
            break;
          }
        }
        const int best_cost = _mm_cvtsi128_si32(_mm512_castsi512_si128(mn)) & 0xffff;
        wta_pixel(o, best, best_cost, x, s, disp_row, conf_row);
        if (right) fold_right(o, x, W, D, sx > 0, right);
      }
    }
    if (right) right_row_disparities(right, s, meet->right_disparity + static_cast<std::ptrdiff_t>(y) * W);
    flush_mins(pending);  // the next row reads this row's minima
    if (meet && first) meet->stored[y].store(1, std::memory_order_release);
  }
}
#endif

}  // namespace

SweepFn avx512_byte_sweep(int disparities) {
#if S3D_AGG_DISPATCH
  static const bool supported = [] {
    __builtin_cpu_init();
    return cpu_isa_cap() >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
  }();
  if (supported) {
    if (disparities == 64) return sweep_bytes_avx512<1>;
    if (disparities == 128) return sweep_bytes_avx512<2>;
    if (disparities == 256) return sweep_bytes_avx512<4>;
  }
#else
  (void)disparities;
#endif
  return nullptr;
}

}  // namespace s3d::stereo::detail::cpu
