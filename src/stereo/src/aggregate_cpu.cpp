// Cost volume and SGM path aggregation, CPU backend.
// Layout [y][x][d] (uint8 costs, uint16 sums). Inner loops run over d and vectorise (uint16 lanes).
// Same recurrence and the same scanlines as the CUDA backend; only the grouping of paths into volumes differs
// (integer sums: the total is identical). Two sweeps (top-down + left->right, bottom-up + right->left) on two
// threads; the engine's aggregate_wta() lets them meet in the middle and takes the winner of each row as
// soon as both sweeps have passed it (one volume instead of two, no separate WTA pass).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <omp.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "aggregate_math.hpp"
#include "backend.hpp"
#include "cpu_simd.hpp"
#include "wta_cpu.hpp"
#include "wta_math.hpp"

// The two hot loops of this file are compiled for AVX-512 (BW / VPOPCNTDQ), AVX2 (POPCNT) and baseline
// x86-64 and picked at run time by CPU feature (GCC's target_clones cannot name these AVX-512 subsets).
// Integer math: every variant gives the same results.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define S3D_AGG_DISPATCH 1
#define S3D_TARGET(isa) __attribute__((target(isa)))
#else
#define S3D_AGG_DISPATCH 0
#define S3D_TARGET(isa)
#endif

namespace s3d::stereo::detail::cpu {
namespace {


/// cur[0..D) = L(p, .) from prev (prev[-1] and prev[D] hold a sentinel (0x7fff)). Returns min_d cur.
__attribute__((always_inline)) inline int path_step_row(const std::uint8_t* __restrict cost, const std::uint16_t* __restrict prev, int prev_min,
                         std::uint16_t* __restrict cur, int D, int p1, int p2) {
  const std::uint16_t jump = static_cast<std::uint16_t>(prev_min + p2);
  const std::uint16_t pm = static_cast<std::uint16_t>(prev_min);
  const std::uint16_t P1 = static_cast<std::uint16_t>(p1);
  std::uint16_t mn = 0xffff;
  for (int d = 0; d < D; ++d) {
    std::uint16_t m = std::min(prev[d - 1], prev[d + 1]);
    m = static_cast<std::uint16_t>(m + P1);
    std::uint16_t v = std::min(prev[d], m);
    v = std::min(v, jump);
    const std::uint16_t l = static_cast<std::uint16_t>(cost[d] + static_cast<std::uint16_t>(v - pm));
    cur[d] = l;
    mn = std::min(mn, l);
  }
  return mn;
}

/// The same step with byte rows (prev[-1] and prev[D] hold 0xff), exact when max cost + P2 <= 255 (see
/// use_byte_rows()): every L <= max cost + P2 and prev_min <= max cost, so jump = prev_min + P2 fits, and
/// min(m + P1, jump) = min(m, jump - P1) + P1 (P1 < P2) never leaves [0, 255]. Twice the lanes per vector
/// and half the row traffic of the uint16 step.
__attribute__((always_inline)) inline int path_step_row(const std::uint8_t* __restrict cost,
                                                        const std::uint8_t* __restrict prev, int prev_min,
                                                        std::uint8_t* __restrict cur, int D, int p1, int p2) {
  const std::uint8_t jump_m = static_cast<std::uint8_t>(prev_min + p2 - p1);
  const std::uint8_t pm = static_cast<std::uint8_t>(prev_min);
  const std::uint8_t P1 = static_cast<std::uint8_t>(p1);
  std::uint8_t mn = 0xff;
  for (int d = 0; d < D; ++d) {
    std::uint8_t m = std::min(prev[d - 1], prev[d + 1]);
    m = std::min(m, jump_m);
    m = static_cast<std::uint8_t>(m + P1);
    const std::uint8_t v = std::min(prev[d], m);
    const std::uint8_t l = static_cast<std::uint8_t>(cost[d] + static_cast<std::uint8_t>(v - pm));
    cur[d] = l;
    mn = std::min(mn, l);
  }
  return mn;
}

/// First pixel of a path: L = C.
template <typename L>
__attribute__((always_inline)) inline int path_start(const std::uint8_t* __restrict cost, L* __restrict cur, int D) {
  L mn = static_cast<L>(~L{0});
  for (int d = 0; d < D; ++d) {
    cur[d] = cost[d];
    mn = std::min<L>(mn, cost[d]);
  }
  return mn;
}

/// Path rows of one byte are exact when every L (<= max cost + P2, costs <= 64) and the jump fit in one.
bool use_byte_rows(const MatchSpec& s) { return std::max(64, s.max_cost) + s.p2 <= 255 && s.p1 < s.p2 && s.p1 >= 0; }

template <typename L>
constexpr L sentinel() {
  return sizeof(L) == 1 ? static_cast<L>(0xff) : static_cast<L>(0x7fff);
}

}  // namespace

__attribute__((always_inline)) static inline void cost_row_impl(const std::uint64_t* __restrict ref, const std::uint64_t* __restrict target, int W, int D,
                     int min_d, int sign, int max_cost, std::uint8_t* __restrict out) {
  for (int x = 0; x < W; ++x) {
    const std::uint64_t r = ref[x];
    std::uint8_t* c = out + static_cast<std::ptrdiff_t>(x) * D;
    // target column x + sign*(min_d + d): inside for d in [lo, hi)
    int lo, hi;
    if (sign < 0) {  // xt = x - min_d - d in [0, W)  <=>  d in (x - min_d - W, x - min_d]
      lo = x - min_d - W + 1;
      hi = x - min_d + 1;
    } else {         // xt = x + min_d + d in [0, W)  <=>  d in [-x - min_d, W - x - min_d)
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
S3D_TARGET("avx512f,avx512vpopcntdq") static void cost_row_avx512(const std::uint64_t* __restrict ref,
                                                             const std::uint64_t* __restrict target, int W, int D,
                                                             int min_d, int sign, int max_cost,
                                                             std::uint8_t* __restrict out) {
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
S3D_TARGET("popcnt") static void cost_row_popcnt(const std::uint64_t* ref, const std::uint64_t* target, int W, int D,
                                                 int min_d, int sign, int max_cost, std::uint8_t* out) {
  cost_row_impl(ref, target, W, D, min_d, sign, max_cost, out);
}
static void cost_row_base(const std::uint64_t* ref, const std::uint64_t* target, int W, int D, int min_d, int sign,
                          int max_cost, std::uint8_t* out) {
  cost_row_impl(ref, target, W, D, min_d, sign, max_cost, out);
}
using CostRowFn = void (*)(const std::uint64_t*, const std::uint64_t*, int, int, int, int, int, std::uint8_t*);
/// Highest instruction set the dispatch may use: 2 = AVX-512, 1 = AVX2 / POPCNT, 0 = baseline. The
/// environment variable S3D_STEREO_CPU_ISA (avx2 | baseline) lowers it, so tests can run every variant.
static int isa_cap() {
  const char* e = std::getenv("S3D_STEREO_CPU_ISA");
  if (e && std::strcmp(e, "baseline") == 0) return 0;
  if (e && std::strcmp(e, "avx2") == 0) return 1;
  return 2;
}
static CostRowFn pick_cost_row() {
#if S3D_AGG_DISPATCH
  __builtin_cpu_init();
  const int cap = isa_cap();
  if (cap >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vpopcntdq")) return cost_row_avx512;
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


namespace {

/// Buffers of one sweep: per path, the previous and current rows of L (D+2 per pixel, sentinels at both
/// ends) and their minima; the horizontal path's L for the whole row (same layout).
struct SweepBuffers {
  std::vector<std::uint16_t> rows;  // [2][paths][W][D+2]
  std::vector<int> mins;            // [2][paths][W]
  std::vector<std::uint16_t> hrow;  // [W][D+2]
  std::vector<std::uint8_t> rows8;  // the same two with byte rows (use_byte_rows())
  std::vector<std::uint8_t> hrow8;
  std::vector<std::uint16_t> sums;  // [W][D]: this row's sums (fused winner-take-all) 
  std::vector<std::uint16_t> total; // [D]
};

/// Fused winner-take-all of the two sweeps: they walk the rows in opposite orders and meet in the middle.
/// For each row, the first sweep to finish it stores its sums in `volume`; the second adds its own to them
/// and takes the winner at once, so each row of sums is written once and read once (instead of two volumes
/// written and both read again by a separate pass).
struct Meet {
  std::unique_ptr<std::atomic<int>[]> arrivals;  ///< per row: sweeps that finished it
  std::unique_ptr<std::atomic<int>[]> stored;    ///< per row: 1 once the first sweep's sums are in `volume`
  std::uint16_t* volume = nullptr;
  float* disparity = nullptr;
  float* confidence = nullptr;
};

/// Winner-take-all of one row from the two sweeps' sums (same decisions as wta_cpu.cpp and the CUDA WTA).
__attribute__((always_inline)) inline void wta_row(const std::uint16_t* __restrict a, const std::uint16_t* __restrict b,
                                                   std::uint16_t* __restrict s, const MatchSpec& spec,
                                                   float* __restrict disparity, float* __restrict confidence) {
  const int W = spec.width, D = spec.disparities;
  for (int x = 0; x < W; ++x) {
    const std::uint16_t* pa = a + static_cast<std::ptrdiff_t>(x) * D;
    const std::uint16_t* pb = b + static_cast<std::ptrdiff_t>(x) * D;
    std::uint32_t key = 0xffffffffu;
    for (int d = 0; d < D; ++d) {
      const std::uint16_t v = static_cast<std::uint16_t>(pa[d] + pb[d]);
      s[d] = v;
      key = std::min(key, (static_cast<std::uint32_t>(v) << 16) | static_cast<std::uint32_t>(d));
    }
    wta_pixel(s, static_cast<int>(key & 0xffffu), static_cast<int>(key >> 16), x, spec, disparity, confidence);
  }
}

template <typename L>
std::vector<L>& rows_of(SweepBuffers& b);
template <>
std::vector<std::uint16_t>& rows_of<std::uint16_t>(SweepBuffers& b) { return b.rows; }
template <>
std::vector<std::uint8_t>& rows_of<std::uint8_t>(SweepBuffers& b) { return b.rows8; }
template <typename L>
std::vector<L>& hrow_of(SweepBuffers& b);
template <>
std::vector<std::uint16_t>& hrow_of<std::uint16_t>(SweepBuffers& b) { return b.hrow; }
template <>
std::vector<std::uint8_t>& hrow_of<std::uint8_t>(SweepBuffers& b) { return b.hrow8; }

/// One vertical sweep (top-down for dy = 1, bottom-up for dy = -1) computing, row by row, the vertical path,
/// the two diagonal paths of that sweep (8 paths) and one horizontal path (direction hdx) of each row, and
/// ASSIGNING their sum to `out`. Two sweeps (dy = 1 with hdx = 1, dy = -1 with hdx = -1) cover all paths,
/// reading the cost volume twice and writing two volumes once: far less memory traffic than one
/// read-modify-write pass per path. Each sweep is sequential (rows depend on each other); the two run on
/// two threads.
template <typename L, int kD>
__attribute__((always_inline)) inline void sweep_impl(const std::uint8_t* __restrict cost, const MatchSpec& s, int dy,
                                                    int hdx, std::uint16_t* __restrict out, SweepBuffers& b,
                                                    Meet* meet) {
  std::vector<L>& rows = rows_of<L>(b);
  std::vector<L>& small = hrow_of<L>(b);
  constexpr L kSent = sentinel<L>();
  const int W = s.width, H = s.height, D = kD > 0 ? kD : s.disparities;  // kD: fixed at compile time
  const int stride = D + 2;
  const int np = s.paths == 8 ? 3 : 1;
  // Planes [plane][W][D+2] (sentinels at both ends per pixel). The pixels of a row are visited in the
  // horizontal path's direction sx, so that path needs only its last pixel. Diagonal path dx = -sx reads a
  // pixel not yet visited in this row: one plane (k_direct), updated in place. The vertical path (planes 0
  // and np) and diagonal path dx = +sx (planes k_delayed and np + 1) alternate between two planes by row
  // parity. Less memory than two planes per path, and no separate horizontal-path row pass.
  const std::size_t plane = static_cast<std::size_t>(np == 3 ? np + 2 : np + 1) * W * stride;
  if (rows.size() < plane) rows.resize(plane);
  for (std::size_t k = 0; k < plane; k += stride) {  // only the sentinels are ever read before written
    rows[k] = kSent;
    rows[k + stride - 1] = kSent;
  }
  b.mins.resize(static_cast<std::size_t>(np + 1) * W);
  // small: horizontal path (this pixel / the last one)
  small.assign(static_cast<std::size_t>(2) * stride, kSent);
  if (meet) {
    b.sums.resize(static_cast<std::size_t>(W) * D);
    b.total.resize(static_cast<std::size_t>(D));
  }
  const int sx = hdx > 0 ? 1 : -1;
  const int k_direct = sx > 0 ? 2 : 1;   // dx = -sx
  const int k_delayed = sx > 0 ? 1 : 2;  // dx = +sx
  for (int i = 0; i < H; ++i) {
    const int y = dy > 0 ? i : H - 1 - i;
    const std::uint8_t* crow = cost + static_cast<std::ptrdiff_t>(y) * W * D;
    // fused WTA: the first sweep to reach a row writes its sums straight into `volume`, the second into its
    // own row buffer (then waits, at most about one row's time, until the first has finished that row)
    bool first = true;
    if (meet) first = meet->arrivals[y].fetch_add(1, std::memory_order_acq_rel) == 0;
    std::uint16_t* orow =
        meet && !first ? b.sums.data() : (meet ? meet->volume : out) + static_cast<std::ptrdiff_t>(y) * W * D;
    int hmin = 0;
    for (int j = 0; j < W; ++j) {
      const int x = sx > 0 ? j : W - 1 - j;
      const std::uint8_t* c = crow + static_cast<std::ptrdiff_t>(x) * D;
      // horizontal path
      L* h = small.data() + (j & 1) * stride + 1;
      hmin = j == 0 ? path_start(c, h, D)
                    : path_step_row(c, small.data() + ((j & 1) ^ 1) * stride + 1, hmin, h, D, s.p1, s.p2);
      // vertical path: planes 0 and np alternate between rows
      const std::size_t vcur = (i & 1) ? static_cast<std::size_t>(np) * W : 0;
      const std::size_t vprev = (i & 1) ? 0 : static_cast<std::size_t>(np) * W;
      L* v = rows.data() + (vcur + x) * stride + 1;
      {
        int* m = b.mins.data() + x;
        *m = i == 0 ? path_start(c, v, D)
                    : path_step_row(c, rows.data() + (vprev + x) * stride + 1, *m, v, D, s.p1, s.p2);
      }
      std::uint16_t* o = orow + static_cast<std::ptrdiff_t>(x) * D;
      if (np == 3) {
        // dx = -sx: previous pixel x + sx (not visited yet in this row: still the previous row's)
        L* a = rows.data() + (static_cast<std::size_t>(k_direct) * W + x) * stride + 1;
        {
          int* m = b.mins.data() + static_cast<std::size_t>(k_direct) * W + x;
          const int xp = x + sx;
          if (i == 0 || xp < 0 || xp >= W) {
            *m = path_start(c, a, D);
          } else {
            const L* prev = rows.data() + (static_cast<std::size_t>(k_direct) * W + xp) * stride + 1;
            *m = path_step_row(c, prev, m[sx], a, D, s.p1, s.p2);
          }
        }
        // dx = +sx: previous pixel x - sx (just visited): planes k_delayed and np + 1 alternate between rows
        const std::size_t dcur = (i & 1) ? static_cast<std::size_t>(np + 1) : static_cast<std::size_t>(k_delayed);
        const std::size_t dprev = (i & 1) ? static_cast<std::size_t>(k_delayed) : static_cast<std::size_t>(np + 1);
        L* e = rows.data() + (dcur * W + x) * stride + 1;
        {
          int* mcur = b.mins.data() + ((i & 1) ? static_cast<std::size_t>(np) : static_cast<std::size_t>(k_delayed)) * W;
          const int* mprev =
              b.mins.data() + ((i & 1) ? static_cast<std::size_t>(k_delayed) : static_cast<std::size_t>(np)) * W;
          const int xp = x - sx;
          mcur[x] = i == 0 || j == 0
                        ? path_start(c, e, D)
                        : path_step_row(c, rows.data() + (dprev * W + xp) * stride + 1, mprev[xp], e, D, s.p1, s.p2);
        }
        const L* __restrict c0 = v;
        const L* __restrict c1 = a;
        const L* __restrict c2 = e;
        const L* __restrict hh = h;
        for (int d = 0; d < D; ++d) o[d] = static_cast<std::uint16_t>(hh[d] + c0[d] + c1[d] + c2[d]);
      } else {
        const L* __restrict c0 = v;
        const L* __restrict hh = h;
        for (int d = 0; d < D; ++d) o[d] = static_cast<std::uint16_t>(hh[d] + c0[d]);
      }
    }
    if (meet) {
      const std::uint16_t* vrow = meet->volume + static_cast<std::ptrdiff_t>(y) * W * D;
      if (first) {
        meet->stored[y].store(1, std::memory_order_release);
      } else {
        while (meet->stored[y].load(std::memory_order_acquire) == 0) std::this_thread::yield();
        const std::ptrdiff_t r = static_cast<std::ptrdiff_t>(y) * W;
        wta_row(orow, vrow, b.total.data(), s, meet->disparity + r, meet->confidence ? meet->confidence + r : nullptr);
      }
    }
  }
}

template <typename L, int kD>
S3D_TARGET("avx512f,avx512bw,avx512vl")
void sweep_avx512(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
                  Meet* meet) {
  sweep_impl<L, kD>(cost, s, dy, hdx, out, b, meet);
}
template <typename L, int kD>
S3D_TARGET("avx2")
void sweep_avx2(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
                  Meet* meet) {
  sweep_impl<L, kD>(cost, s, dy, hdx, out, b, meet);
}
template <typename L, int kD>
void sweep_base(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
                  Meet* meet) {
  sweep_impl<L, kD>(cost, s, dy, hdx, out, b, meet);
}
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
S3D_AVX512_BYTES inline int low_byte(__m512i x) {
  return _mm_cvtsi128_si32(_mm512_castsi512_si128(x)) & 0xff;
}

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
  b.total.resize(static_cast<std::size_t>(D));
  std::uint16_t* tot = b.total.data();
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
        defer_min(pending, i == 0 ? start_mem<NV>(c, vp, v)
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
                    i == 0 || j == 0 ? start_mem<NV>(c, ep, e)
                                     : step_mem<NV>(c, rows.data() + (dprev * W + xp) * stride + 1, mdprev[xp], ep,
                                                    p1v, p2mp1, e),
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
          _mm512_storeu_si512(tot + 32 * q, sum[q]);
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
        wta_pixel(tot, best, best_cost, x, s, disp_row, conf_row);
      }
    }
    flush_mins(pending);  // the next row reads this row's minima
    if (meet && first) meet->stored[y].store(1, std::memory_order_release);
  }
}
#endif

using SweepFn = void (*)(const std::uint8_t*, const MatchSpec&, int, int, std::uint16_t*, SweepBuffers&, Meet*);
template <typename L, int kD>
SweepFn pick_sweep() {
#if S3D_AGG_DISPATCH
  __builtin_cpu_init();
  const int cap = isa_cap();
  if (cap >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return sweep_avx512<L, kD>;
  if (cap >= 1 && __builtin_cpu_supports("avx2")) return sweep_avx2<L, kD>;
#endif
  return sweep_base<L, kD>;
}
void sweep(const std::uint8_t* cost, const MatchSpec& s, int dy, int hdx, std::uint16_t* out, SweepBuffers& b,
           Meet* meet) {
  // common disparity counts get a variant with D fixed (unrolled row steps, no loop overhead per pixel)
  static const SweepFn fns[2][4] = {
      {pick_sweep<std::uint16_t, 0>(), pick_sweep<std::uint16_t, 64>(), pick_sweep<std::uint16_t, 128>(),
       pick_sweep<std::uint16_t, 256>()},
      {pick_sweep<std::uint8_t, 0>(), pick_sweep<std::uint8_t, 64>(), pick_sweep<std::uint8_t, 128>(),
       pick_sweep<std::uint8_t, 256>()}};
  const int D = s.disparities;
  const int k = D == 64 ? 1 : D == 128 ? 2 : D == 256 ? 3 : 0;
#if S3D_AGG_DISPATCH
  static const bool bytes512 = [] {
    __builtin_cpu_init();
    return isa_cap() >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
  }();
  if (bytes512 && k > 0 && use_byte_rows(s)) {
    static const SweepFn bfns[3] = {sweep_bytes_avx512<1>, sweep_bytes_avx512<2>, sweep_bytes_avx512<4>};
    return bfns[k - 1](cost, s, dy, hdx, out, b, meet);
  }
#endif
  fns[use_byte_rows(s) ? 1 : 0][k](cost, s, dy, hdx, out, b, meet);
}

/// Kept per thread across calls: no page faults on every frame (the sentinels are rewritten per sweep).
SweepBuffers& thread_buffers() {
  static thread_local SweepBuffers buffers;
  return buffers;
}

}  // namespace

void aggregate(const std::uint8_t* cost, const MatchSpec& s, std::uint16_t* volume_a, std::uint16_t* volume_b) {
  const int threads = std::max(1, std::min(2, omp_get_max_threads()));
#pragma omp parallel num_threads(threads)
  {
    SweepBuffers& buffers = thread_buffers();
#pragma omp sections
    {
#pragma omp section
      sweep(cost, s, 1, 1, volume_a, buffers, nullptr);
#pragma omp section
      sweep(cost, s, -1, -1, volume_b, buffers, nullptr);
    }
  }
}

/// The engine's aggregation + winner-take-all (same results as aggregate() then wta()): `volume` is
/// W*H*D scratch holding, per row, the sums of whichever sweep finished that row first.
void aggregate_wta(const std::uint8_t* cost, const MatchSpec& s, std::uint16_t* volume, float* disparity,
                   float* confidence) {
  Meet meet;
  meet.arrivals.reset(new std::atomic<int>[static_cast<std::size_t>(s.height)]);
  meet.stored.reset(new std::atomic<int>[static_cast<std::size_t>(s.height)]);
  for (int y = 0; y < s.height; ++y) {
    meet.arrivals[y].store(0, std::memory_order_relaxed);
    meet.stored[y].store(0, std::memory_order_relaxed);
  }
  meet.volume = volume;
  meet.disparity = disparity;
  meet.confidence = confidence;
  const int threads = std::max(1, std::min(2, omp_get_max_threads()));
  // One thread runs both sweeps in turn (the second then finds every row stored); two run one each and
  // wait only when one reaches a row the other is storing.
#pragma omp parallel num_threads(threads)
  {
    SweepBuffers& buffers = thread_buffers();
#pragma omp sections
    {
#pragma omp section
      sweep(cost, s, 1, 1, nullptr, buffers, &meet);
#pragma omp section
      sweep(cost, s, -1, -1, nullptr, buffers, &meet);
    }
  }
}

void add_volume(std::uint16_t* a, const std::uint16_t* b, std::size_t count) {
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(count); ++i)
    a[i] = static_cast<std::uint16_t>(a[i] + b[i]);
}

}  // namespace s3d::stereo::detail::cpu
