// SGM path aggregation, CUDA backend.
// A group of G lanes walks one scanline of one direction; lane t holds disparities [t*K, t*K+K) in
// registers, so the d+-1 neighbours cross lanes only at the group's ends (two shuffles) and min_k L is a
// log2(G)-step butterfly: small G keeps the per-step dependency chain short (the horizontal paths have
// only H scanlines, each W steps long: latency, not bandwidth, bounds them). Costs are computed on the fly
// from the census codes (never stored) and the next pixel's codes and partial sums are loaded one step
// ahead, so global-memory latency stays off the chain. The paths are never stored: the 6 vertical and
// diagonal paths add into volume A (the first assigns); the 2 horizontal ones, in one kernel on a second
// stream running concurrently, assign into volumes B and C; WTA reads A + B + C.
// Same recurrence as the CPU (aggregate_math.hpp), so the sums are identical.
#include <algorithm>

#include "aggregate_math.hpp"
#include "backend.hpp"
#include "s3d/core/cuda_arch.cuh"
#include "s3d/core/cuda_check.cuh"
#include "sgm_paths_cuda.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

constexpr int kBig = 1 << 24;  // outside [0, D): never a minimum, never overflows int

using ::s3d::detail::warp_reduce_min;

template <int G, int K>
struct Scan {
  static constexpr int kPairs = K / 2;

  __device__ static void run(const std::uint64_t* __restrict__ ref, const std::uint64_t* __restrict__ target,
                             const MatchSpec& s, int x, int y, int dx, int dy, std::uint16_t* __restrict__ volume,
                             int vpitch, bool assign, unsigned mask, int glane) {
    const int W = s.width, H = s.height, D = s.disparities;
    const int d0 = glane * K;
    int L[K];
    int prev_min = 0;
    bool first = true;
    // operands of the current pixel, loaded one step ahead
    std::uint64_t r_cur = 0, t_cur[K];
    unsigned int old_cur[kPairs];
    auto load = [&](int px, int py, std::uint64_t& r, std::uint64_t (&t)[K], unsigned int (&old)[kPairs]) {
      const std::ptrdiff_t pix = static_cast<std::ptrdiff_t>(py) * W + px;
      r = __ldg(ref + pix);
      const std::uint64_t* trow = target + static_cast<std::ptrdiff_t>(py) * W;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const int xt = px + s.sign * (s.min_disparity + d0 + j);
        t[j] = (xt >= 0 && xt < W) ? __ldg(trow + xt) : 0;
      }
      if (!assign) {
        const unsigned int* v2 = reinterpret_cast<const unsigned int*>(volume + pix * vpitch + d0);
#pragma unroll
        for (int j = 0; j < kPairs; ++j) old[j] = v2[j];
      }
    };
    load(x, y, r_cur, t_cur, old_cur);
    while (true) {
      const int nx = x + dx, ny = y + dy;
      const bool has_next = nx >= 0 && nx < W && ny >= 0 && ny < H;
      std::uint64_t r_next = 0, t_next[K];
      unsigned int old_next[kPairs];
      if (has_next) load(nx, ny, r_next, t_next, old_next);

      int c[K];
#pragma unroll
      for (int j = 0; j < K; ++j) {
        const int xt = x + s.sign * (s.min_disparity + d0 + j);
        c[j] = (xt < 0 || xt >= W) ? s.max_cost : popcount64(r_cur ^ t_cur[j]);
      }
      if (first) {
#pragma unroll
        for (int j = 0; j < K; ++j) L[j] = d0 + j < D ? c[j] : kBig;
        first = false;
      } else {
        int left = __shfl_up_sync(mask, L[K - 1], 1, G);
        int right = __shfl_down_sync(mask, L[0], 1, G);
        if (glane == 0) left = kBig;
        if (glane == G - 1) right = kBig;
        int n[K];
#pragma unroll
        for (int j = 0; j < K; ++j) {
          const int pm = j == 0 ? left : L[j - 1];
          const int pp = j == K - 1 ? right : L[j + 1];
          n[j] = d0 + j < D ? path_step(c[j], L[j], pm, pp, prev_min, s.p1, s.p2) : kBig;
        }
#pragma unroll
        for (int j = 0; j < K; ++j) L[j] = n[j];
      }
      int m = L[0];
#pragma unroll
      for (int j = 1; j < K; ++j) m = min(m, L[j]);
#pragma unroll
      for (int o = G / 2; o > 0; o >>= 1) m = min(m, __shfl_xor_sync(mask, m, o, G));
      prev_min = m;
      // store (padding d >= D receives junk that nobody reads)
      unsigned int* v2 = reinterpret_cast<unsigned int*>(volume + (static_cast<std::ptrdiff_t>(y) * W + x) * vpitch + d0);
#pragma unroll
      for (int j = 0; j < kPairs; ++j) {
        unsigned int lo = static_cast<unsigned int>(L[2 * j]) & 0xffffu;
        unsigned int hi = static_cast<unsigned int>(L[2 * j + 1]) & 0xffffu;
        if (!assign) {
          lo = (lo + (old_cur[j] & 0xffffu)) & 0xffffu;
          hi = (hi + (old_cur[j] >> 16)) & 0xffffu;
        }
        v2[j] = lo | (hi << 16);
      }
      if (!has_next) break;
      x = nx;
      y = ny;
      r_cur = r_next;
#pragma unroll
      for (int j = 0; j < K; ++j) t_cur[j] = t_next[j];
#pragma unroll
      for (int j = 0; j < kPairs; ++j) old_cur[j] = old_next[j];
    }
  }
};

/// Scanline `scan` of direction (dx, dy): its entry pixel, or false when scan is past the last one.
__device__ S3D_FORCEINLINE bool scan_start(int scan, int W, int H, int dx, int dy, int& x, int& y) {
  if (dy == 0) {
    if (scan >= H) return false;
    y = scan;
    x = dx > 0 ? 0 : W - 1;
  } else if (dx == 0) {
    if (scan >= W) return false;
    x = scan;
    y = dy > 0 ? 0 : H - 1;
  } else {
    if (scan >= W + H - 1) return false;
    if (scan < W) {  // entry row
      x = dx > 0 ? scan : W - 1 - scan;
      y = dy > 0 ? 0 : H - 1;
    } else {  // entry column, corner excluded
      const int k = scan - W + 1;
      x = dx > 0 ? 0 : W - 1;
      y = dy > 0 ? k : H - 1 - k;
    }
  }
  return true;
}

/// One direction (dx, dy) into `volume`; with `volume2`, scanlines [H, 2H) walk the opposite horizontal
/// direction into volume2 (both assign: the two horizontal paths run concurrently, without read-modify-write).
template <int G, int K>
__global__ void __launch_bounds__(128) aggregate_path_kernel(const std::uint64_t* __restrict__ ref,
                                                             const std::uint64_t* __restrict__ target, MatchSpec s,
                                                             int dx, int dy, std::uint16_t* __restrict__ volume,
                                                             std::uint16_t* __restrict__ volume2, int vpitch,
                                                             bool assign) {
  const int lane = threadIdx.x & 31;
  const int glane = lane % G;
  const unsigned mask = (G == 32) ? 0xffffffffu : (((1u << G) - 1u) << (lane - glane));
  int scan = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / G);
  std::uint16_t* out = volume;
  if (volume2 && scan >= s.height) {
    scan -= s.height;
    dx = -dx;
    out = volume2;
  }
  int x, y;
  if (!scan_start(scan, s.width, s.height, dx, dy, x, y)) return;
  Scan<G, K>::run(ref, target, s, x, y, dx, dy, out, vpitch, assign, mask, glane);
}

struct Layout {
  int g, k;
};

/// Lanes per scanline (G) and disparities per lane (K), pitch = G*K >= D. Auto (lanes == 0): K <= 16 keeps
/// the registers in check, G as small as that allows keeps the shuffle chain short (measured on an H200,
/// the per-step latency of a single warp then dominates: see bench_sgm's stage table). lanes = 4/8/16/32
/// forces G (K = 4, 8, 16 or 32, the smallest that covers D): an experiment knob for bench_sgm.
Layout layout(int disparities, int lanes) {
  if (lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32) {
    for (int k : {4, 8, 16, 32})
      if (lanes * k >= disparities) return {lanes, k};
    return {32, 32};
  }
  if (disparities <= 16) return {4, 4};
  if (disparities <= 32) return {4, 8};
  if (disparities <= 64) return {4, 16};
  if (disparities <= 128) return {8, 16};
  if (disparities <= 256) return {16, 16};
  if (disparities <= 512) return {32, 16};
  return {32, 32};
}

template <int G, int K>
void launch(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint16_t* vol_a,
            std::uint16_t* vol_b, std::uint16_t* vol_c, const AggregateStreams& st) {
  const unsigned block = 128;
  const int vp = G * K;
  // the two horizontal paths on the side stream, into B and C
  S3D_CUDA_CHECK(cudaEventRecord(st.fork, st.main));
  S3D_CUDA_CHECK(cudaStreamWaitEvent(st.side, st.fork, 0));
  aggregate_path_kernel<G, K><<<grid_size(static_cast<std::size_t>(2 * s.height) * G, block), block, 0, st.side>>>(
      ref, target, s, 1, 0, vol_b, vol_c, vp, true);
  S3D_CUDA_CHECK_LAUNCH();
  S3D_CUDA_CHECK(cudaEventRecord(st.join, st.side));
  // vertical (+ diagonal) paths on the main stream, into A
  bool first = true;
  for (int p = 2; p < s.paths; ++p) {
    int dx, dy;
    path_direction(p, dx, dy);
    const int scans = dx == 0 ? s.width : s.width + s.height - 1;
    aggregate_path_kernel<G, K><<<grid_size(static_cast<std::size_t>(scans) * G, block), block, 0, st.main>>>(
        ref, target, s, dx, dy, vol_a, nullptr, vp, first);
    S3D_CUDA_CHECK_LAUNCH();
    first = false;
  }
  S3D_CUDA_CHECK(cudaStreamWaitEvent(st.main, st.join, 0));
}

__global__ void add_volumes_kernel(std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) a[i] = static_cast<std::uint16_t>(a[i] + b[i]);
}

// ---- per-path uint8 pipeline (sgm_paths_cuda.cuh) ----
// Each lane owns kPK = 16 consecutive disparities of one scanline (G = pitch / 16 lanes per scanline), so its
// 16 path costs leave in one 16-byte store. Vertical and diagonal scanlines load the next pixel's census codes
// one step ahead. Horizontal scanlines slide: from x to x + dx the target column of d becomes that of
// d + sign*dx, so the lanes shift their codes by one (one shuffle across the lane boundary) and only the edge
// lane needs a new code per step; those and the reference codes are loaded G steps at a time (one per lane),
// a chunk ahead, and picked by shuffles: the W-step horizontal chain never waits on global memory.

constexpr int kPK = 16;

__device__ S3D_FORCEINLINE void store_costs16(std::uint8_t* p, const int (&L)[kPK]) {
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = (static_cast<unsigned>(L[4 * i]) & 0xffu) | ((static_cast<unsigned>(L[4 * i + 1]) & 0xffu) << 8) |
           ((static_cast<unsigned>(L[4 * i + 2]) & 0xffu) << 16) | (static_cast<unsigned>(L[4 * i + 3]) << 24);
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

/// One recurrence step of a lane's K consecutive disparities (the first step takes the costs), then
/// prev_min = min over the group's G lanes (one redux instruction for a whole warp, else a butterfly).
template <int G, int K>
__device__ S3D_FORCEINLINE void path_update(int (&L)[K], const int (&c)[K], int& prev_min, bool first, int d0, int D,
                                            int p1, int p2, unsigned mask, int glane) {
  // A whole-warp group is one scanline, converged by construction: a literal full mask spares the
  // compiler's divergence checks (MATCH/VOTE/BRA.DIV) on every shuffle of the per-step chain.
  if constexpr (G == 32) mask = 0xffffffffu;
  if (first) {
#pragma unroll
    for (int j = 0; j < K; ++j) L[j] = c[j];
  } else {
    int left = __shfl_up_sync(mask, L[K - 1], 1, G);
    int right = __shfl_down_sync(mask, L[0], 1, G);
    if (glane == 0) left = kBig;
    if (glane == G - 1) right = kBig;
    int n[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int pm = j == 0 ? left : L[j - 1];
      const int pp = j == K - 1 ? right : L[j + 1];
      n[j] = path_step(c[j], L[j], pm, pp, prev_min, p1, p2);
    }
#pragma unroll
    for (int j = 0; j < K; ++j) L[j] = n[j];
  }
  if (d0 + K > D) {  // the lane holds padding d >= D: never a minimum, never a neighbour
#pragma unroll
    for (int j = 0; j < K; ++j)
      if (d0 + j >= D) L[j] = kBig;
  }
  int m = L[0];
#pragma unroll
  for (int j = 1; j < K; ++j) m = min(m, L[j]);
  if constexpr (G == 32) {
    m = warp_reduce_min(m);
  } else {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) m = min(m, __shfl_xor_sync(mask, m, o, G));
  }
  prev_min = m;
}

// ---- the same recurrence on packed pairs (per-path pipeline, cost-volume scans) ----
// Two disparities per 32-bit register as unsigned 16-bit halves, with Hopper's 16x2 min / add-min (DPX)
// instructions: half the instructions of the int version on the per-step chain. Exact: every real value is
// <= max_cost + p2 <= 255 (per_path_fits), the stand-in for "no neighbour" is kBig16 (+ p1 still < 2^16),
// and L + cost - prev_min is one 32-bit add per pair because each half stays in [0, 2^16) with no carry or
// borrow across halves (v >= prev_min in every half).
constexpr unsigned kBig16 = 0x7fffu;

__device__ S3D_FORCEINLINE unsigned vmin16x2(unsigned a, unsigned b) {
#if S3D_CUDA_ARCH >= 900
  unsigned r;
  asm("min.u16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#else
  return __vminu2(a, b);
#endif
}

/// Bytes [b0 b1 b2 b3] of a cost word -> pairs (b0, b1) and (b2, b3).
__device__ S3D_FORCEINLINE void unpack_pairs(unsigned w, unsigned& lo, unsigned& hi) {
  lo = __byte_perm(w, 0u, 0x4140);
  hi = __byte_perm(w, 0u, 0x4342);
}
/// Pairs (a0, a1), (b0, b1) -> bytes [a0 a1 b0 b1] (each half <= 255).
__device__ S3D_FORCEINLINE unsigned pack_pairs(unsigned a, unsigned b) { return __byte_perm(a, b, 0x6420); }

/// Per-lane constants of the packed recurrence: `keep`/`fill` force padding halves (d >= D) to kBig16 with
/// one LOP3 per pair (never a minimum, never a neighbour); a branch there would split the per-step chain.
template <int K>
struct PackedLane {
  unsigned keep[K / 2];
  unsigned fill[K / 2];
  __device__ PackedLane(int d0, int D) {
#pragma unroll
    for (int i = 0; i < K / 2; ++i) {
      const bool lo_pad = d0 + 2 * i >= D, hi_pad = d0 + 2 * i + 1 >= D;
      keep[i] = (lo_pad ? 0u : 0xffffu) | (hi_pad ? 0u : 0xffff0000u);
      fill[i] = (lo_pad ? kBig16 : 0u) | (hi_pad ? kBig16 << 16 : 0u);
    }
  }
  /// State before the first step: L = 0 (padding kBig16) and prev_min = 0 make the first step's update
  /// yield L = C exactly (min(0, 0 + p1, 0 + p2) = 0), so every step runs the same branch-free code.
  __device__ void start(unsigned (&L)[K / 2], int& prev_min) const {
#pragma unroll
    for (int i = 0; i < K / 2; ++i) L[i] = fill[i];
    prev_min = 0;
  }
};

/// One recurrence step of a lane's K consecutive disparities held as K/2 pairs `L` (costs `c` likewise),
/// then prev_min = min over the group's G lanes. Same values as path_update().
template <int G, int K>
__device__ S3D_FORCEINLINE void path_update_packed(unsigned (&L)[K / 2], const unsigned (&c)[K / 2], int& prev_min,
                                                   const PackedLane<K>& lane, unsigned p1x2, int p2, unsigned mask,
                                                   int glane) {
  constexpr int kP = K / 2;
  if constexpr (G == 32) mask = 0xffffffffu;
  unsigned left = __shfl_up_sync(mask, L[kP - 1], 1, G);  // its high half is L(d0 - 1)
  unsigned right = __shfl_down_sync(mask, L[0], 1, G);    // its low half is L(d0 + K)
  if (glane == 0) left = kBig16 << 16;
  if (glane == G - 1) right = kBig16;
  const unsigned min_x2 = static_cast<unsigned>(prev_min) * 0x10001u;
  const unsigned jump_x2 = static_cast<unsigned>(prev_min + p2) * 0x10001u;
  unsigned n[kP];
#pragma unroll
  for (int i = 0; i < kP; ++i) {
    const unsigned pm = __byte_perm(i == 0 ? left : L[i - 1], L[i], 0x5432);       // (L(d-1), L(d))
    const unsigned pp = __byte_perm(L[i], i == kP - 1 ? right : L[i + 1], 0x5432);  // (L(d+1), L(d+2))
    const unsigned a = vmin16x2(L[i], jump_x2);
    const unsigned b = __viaddmin_u16x2(pm, p1x2, a);
    const unsigned v = __viaddmin_u16x2(pp, p1x2, b);
    n[i] = ((c[i] + v - min_x2) & lane.keep[i]) | lane.fill[i];
  }
  unsigned m2 = n[0];
#pragma unroll
  for (int i = 1; i < kP; ++i) m2 = vmin16x2(m2, n[i]);
  int m = static_cast<int>(min(m2 & 0xffffu, m2 >> 16));
  if constexpr (G == 32) {
    m = warp_reduce_min(m);
  } else {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) m = min(m, __shfl_xor_sync(mask, m, o, G));
  }
#pragma unroll
  for (int i = 0; i < kP; ++i) L[i] = n[i];
  prev_min = m;
}

template <int G>
__device__ S3D_FORCEINLINE void path_update16(int (&L)[kPK], const int (&c)[kPK], int& prev_min, bool first, int d0,
                                              int D, int p1, int p2, unsigned mask, int glane) {
  path_update<G, kPK>(L, c, prev_min, first, d0, D, p1, p2, mask, glane);
}

/// A vertical or diagonal scanline from (x, y).
template <int G>
__device__ void scan_general16(const std::uint64_t* __restrict__ ref, const std::uint64_t* __restrict__ target,
                               const MatchSpec& s, int x, int y, int dx, int dy, std::uint8_t* __restrict__ out,
                               int pitch, unsigned mask, int glane) {
  const int W = s.width, H = s.height, D = s.disparities;
  const int d0 = glane * kPK;
  const int base = s.sign * (s.min_disparity + d0);
  int L[kPK];
  int prev_min = 0;
  bool first = true;
  std::uint64_t r_cur, t_cur[kPK];
  auto load = [&](int px, int py, std::uint64_t& r, std::uint64_t(&t)[kPK]) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(py) * W;
    r = __ldg(ref + row + px);
#pragma unroll
    for (int j = 0; j < kPK; ++j) {
      const int xt = px + base + s.sign * j;
      t[j] = (xt >= 0 && xt < W) ? __ldg(target + row + xt) : 0;
    }
  };
  load(x, y, r_cur, t_cur);
  while (true) {
    const int nx = x + dx, ny = y + dy;
    const bool has_next = nx >= 0 && nx < W && ny >= 0 && ny < H;
    std::uint64_t r_next = 0, t_next[kPK];
    if (has_next) load(nx, ny, r_next, t_next);
    int c[kPK];
#pragma unroll
    for (int j = 0; j < kPK; ++j) {
      const int xt = x + base + s.sign * j;
      c[j] = (xt < 0 || xt >= W) ? s.max_cost : popcount64(r_cur ^ t_cur[j]);
    }
    path_update16<G>(L, c, prev_min, first, d0, D, s.p1, s.p2, mask, glane);
    first = false;
    store_costs16(out + (static_cast<std::ptrdiff_t>(y) * W + x) * pitch + d0, L);
    if (!has_next) break;
    x = nx;
    y = ny;
    r_cur = r_next;
#pragma unroll
    for (int j = 0; j < kPK; ++j) t_cur[j] = t_next[j];
  }
}

/// Horizontal scanline of row y in direction dx (sliding target codes, see above).
template <int G>
__device__ void scan_horizontal16(const std::uint64_t* __restrict__ ref, const std::uint64_t* __restrict__ target,
                                  const MatchSpec& s, int y, int dx, std::uint8_t* __restrict__ out, int pitch,
                                  unsigned mask, int glane) {
  const int W = s.width, D = s.disparities, sgn = s.sign;
  const int d0 = glane * kPK;
  const int base = sgn * (s.min_disparity + d0);
  const bool slide_down = sgn * dx > 0;  // t'[d] = t[d + 1] (else t[d - 1])
  const int x0 = dx > 0 ? 0 : W - 1;
  const std::uint64_t* rrow = ref + static_cast<std::ptrdiff_t>(y) * W;
  const std::uint64_t* trow = target + static_cast<std::ptrdiff_t>(y) * W;
  // the edge lane's new code at step k: column fc0 + k*dx (d = G*16-1 when sliding down, else d = 0)
  const int fc0 = x0 + sgn * (s.min_disparity + (slide_down ? G * kPK - 1 : 0));
  auto load_chunk = [&](int chunk, std::uint64_t& rc, std::uint64_t& fc) {
    const int k = chunk * G + glane;
    rc = 0;
    fc = 0;
    if (k < W) {
      rc = __ldg(rrow + x0 + k * dx);
      const int col = fc0 + k * dx;
      if (col >= 0 && col < W) fc = __ldg(trow + col);
    }
  };
  std::uint64_t t[kPK];
#pragma unroll
  for (int j = 0; j < kPK; ++j) {
    const int xt = x0 + base + sgn * j;
    t[j] = (xt >= 0 && xt < W) ? __ldg(trow + xt) : 0;
  }
  std::uint64_t rc_cur, fc_cur, rc_nxt, fc_nxt;
  load_chunk(0, rc_cur, fc_cur);
  load_chunk(1, rc_nxt, fc_nxt);
  int L[kPK];
  int prev_min = 0;
  for (int k = 0; k < W; ++k) {
    const int sub = k & (G - 1);
    if (k > 0 && sub == 0) {
      rc_cur = rc_nxt;
      fc_cur = fc_nxt;
      load_chunk(k / G + 1, rc_nxt, fc_nxt);
    }
    const int x = x0 + k * dx;
    const std::uint64_t r = __shfl_sync(mask, rc_cur, sub, G);
    if (k > 0) {
      const std::uint64_t fresh = __shfl_sync(mask, fc_cur, sub, G);
      if (slide_down) {
        std::uint64_t in = __shfl_down_sync(mask, t[0], 1, G);
        if (glane == G - 1) in = fresh;
#pragma unroll
        for (int j = 0; j < kPK - 1; ++j) t[j] = t[j + 1];
        t[kPK - 1] = in;
      } else {
        std::uint64_t in = __shfl_up_sync(mask, t[kPK - 1], 1, G);
        if (glane == 0) in = fresh;
#pragma unroll
        for (int j = kPK - 1; j > 0; --j) t[j] = t[j - 1];
        t[0] = in;
      }
    }
    int c[kPK];
#pragma unroll
    for (int j = 0; j < kPK; ++j) {
      const int xt = x + base + sgn * j;
      c[j] = (xt < 0 || xt >= W) ? s.max_cost : popcount64(r ^ t[j]);
    }
    path_update16<G>(L, c, prev_min, k == 0, d0, D, s.p1, s.p2, mask, glane);
    store_costs16(out + (static_cast<std::ptrdiff_t>(y) * W + x) * pitch + d0, L);
  }
}

constexpr unsigned kPerPathBlock = 64;

/// blockIdx.y = direction (path_direction order: the two horizontal ones, the longest chains, start first).
template <int G>
__global__ void __launch_bounds__(kPerPathBlock) aggregate_per_path_kernel(const std::uint64_t* __restrict__ ref,
                                                                           const std::uint64_t* __restrict__ target,
                                                                           MatchSpec s, std::uint8_t* __restrict__ paths,
                                                                           int pitch, std::size_t volume_bytes) {
  const int p = static_cast<int>(blockIdx.y);
  int dx, dy;
  path_direction(p, dx, dy);
  const int lane = threadIdx.x & 31;
  const int glane = lane % G;
  const unsigned mask = (G == 32) ? 0xffffffffu : (((1u << G) - 1u) << (lane - glane));
  const int scan = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / G);
  std::uint8_t* out = paths + static_cast<std::size_t>(p) * volume_bytes;
  if (dy == 0) {
    if (scan >= s.height) return;
    scan_horizontal16<G>(ref, target, s, scan, dx, out, pitch, mask, glane);
    return;
  }
  int x, y;
  if (!scan_start(scan, s.width, s.height, dx, dy, x, y)) return;
  scan_general16<G>(ref, target, s, x, y, dx, dy, out, pitch, mask, glane);
}

// Cost-volume variant: the matching costs are computed once per (pixel, d) into a uint8 volume with the
// paths' pitch (target outside the image -> max_cost, as match_cost()), and every direction's step is one
// coalesced 16-byte load per lane (prefetched 3 steps ahead), off the popcount work and the scattered
// census-code loads that the on-the-fly variant repeats per direction.
// One block per 64 pixels of a row: warp w computes disparities [16w, 16w + 16) of the pixels (lane = pixel,
// two rounds of 32), reading the row's target codes from shared memory (lanes read consecutive codes), into a
// shared tile whose rows are padded by 16 bytes (the lanes' 16-byte writes spread over the banks); the tile,
// 64 consecutive pixels of the volume, then leaves in coalesced 16-byte stores. (One thread per 16
// disparities of one pixel reading the codes from global memory touched one cache line per lane and load:
// ~1 ms of L1 wavefronts at 1920x1080 D256.)
constexpr int kCostTilePixels = 64;

template <int G>
__global__ void __launch_bounds__(32 * G) cost_volume_kernel(const std::uint64_t* __restrict__ ref,
                                                             const std::uint64_t* __restrict__ target, MatchSpec s,
                                                             std::uint8_t* __restrict__ cost) {
  constexpr int kPitch = G * kPK;
  constexpr int kTilePitch = kPitch + 16;
  constexpr int kSegment = kCostTilePixels + kPitch - 1;
  __shared__ std::uint64_t segment[kSegment];
  __shared__ __align__(16) std::uint8_t tile[kCostTilePixels * kTilePitch];
  const int W = s.width;
  const int y = static_cast<int>(blockIdx.y);
  const int x0 = static_cast<int>(blockIdx.x) * kCostTilePixels;
  // target columns x + sign*(min_disparity + d) for x in [x0, x0 + 64), d in [0, kPitch)
  const int lo = x0 + s.sign * s.min_disparity + (s.sign < 0 ? -(kPitch - 1) : 0);
  const std::uint64_t* trow = target + static_cast<std::ptrdiff_t>(y) * W;
  for (int i = static_cast<int>(threadIdx.x); i < kSegment; i += static_cast<int>(blockDim.x)) {
    const int xt = lo + i;
    segment[i] = (xt >= 0 && xt < W) ? __ldg(trow + xt) : 0;
  }
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int d0 = static_cast<int>(threadIdx.x >> 5) * kPK;
  std::uint64_t r[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int x = x0 + 32 * h + lane;
    r[h] = x < W ? __ldg(ref + static_cast<std::ptrdiff_t>(y) * W + x) : 0;
  }
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int x = x0 + 32 * h + lane;
    if (x >= W) break;
    int c[kPK];
#pragma unroll
    for (int j = 0; j < kPK; ++j) {
      const int xt = x + s.sign * (s.min_disparity + d0 + j);
      c[j] = (xt < 0 || xt >= W) ? s.max_cost : popcount64(r[h] ^ segment[xt - lo]);
    }
    store_costs16(tile + (32 * h + lane) * kTilePitch + d0, c);
  }
  __syncthreads();
  const int pixels = min(kCostTilePixels, W - x0);
  constexpr int kWordsPerPixel = kPitch / 16;
  std::uint8_t* dst = cost + (static_cast<std::ptrdiff_t>(y) * W + x0) * kPitch;
  for (int i = static_cast<int>(threadIdx.x); i < pixels * kWordsPerPixel; i += static_cast<int>(blockDim.x)) {
    const int p = i / kWordsPerPixel, o = (i - p * kWordsPerPixel) * 16;
    *reinterpret_cast<uint4*>(dst + p * kPitch + o) = *reinterpret_cast<const uint4*>(tile + p * kTilePitch + o);
  }
}

/// Pixels of the scanline from (x, y) in direction (dx, dy) until it leaves the W x H image.
__device__ S3D_FORCEINLINE int scanline_steps(int x, int y, int dx, int dy, int W, int H) {
  int steps = 1 << 30;
  if (dx > 0) steps = min(steps, W - x);
  if (dx < 0) steps = min(steps, x + 1);
  if (dy > 0) steps = min(steps, H - y);
  if (dy < 0) steps = min(steps, y + 1);
  return steps;
}

/// One scanline of any direction from (x, y) over the cost volume.
template <int G>
__device__ void scan_cost16(const std::uint8_t* __restrict__ cost, const MatchSpec& s, int x, int y, int dx, int dy,
                            std::uint8_t* __restrict__ out, int pitch, unsigned mask, int glane) {
  const int W = s.width, H = s.height, D = s.disparities;
  const int d0 = glane * kPK;
  const int steps = scanline_steps(x, y, dx, dy, W, H);
  const std::ptrdiff_t stride = (static_cast<std::ptrdiff_t>(dy) * W + dx) * pitch;
  const std::uint8_t* src = cost + (static_cast<std::ptrdiff_t>(y) * W + x) * pitch + d0;
  std::uint8_t* dst = out + (static_cast<std::ptrdiff_t>(y) * W + x) * pitch + d0;
  auto load = [&](int k) {
    return k < steps ? __ldg(reinterpret_cast<const uint4*>(src + k * stride)) : make_uint4(0, 0, 0, 0);
  };
  uint4 q0 = load(0), q1 = load(1), q2 = load(2);
  unsigned L[kPK / 2];
  int prev_min;
  const PackedLane<kPK> pl(d0, D);
  pl.start(L, prev_min);
  const unsigned p1x2 = static_cast<unsigned>(s.p1) * 0x10001u;
  for (int k = 0; k < steps; ++k) {
    const uint4 q3 = load(k + 3);
    const unsigned w[4] = {q0.x, q0.y, q0.z, q0.w};
    unsigned c[kPK / 2];
#pragma unroll
    for (int i = 0; i < 4; ++i) unpack_pairs(w[i], c[2 * i], c[2 * i + 1]);
    path_update_packed<G, kPK>(L, c, prev_min, pl, p1x2, s.p2, mask, glane);
    *reinterpret_cast<uint4*>(dst + k * stride) =
        make_uint4(pack_pairs(L[0], L[1]), pack_pairs(L[2], L[3]), pack_pairs(L[4], L[5]), pack_pairs(L[6], L[7]));
    q0 = q1;
    q1 = q2;
    q2 = q3;
  }
}

// Narrow lanes over the cost volume: K = 4 (8, 16 for D > 128, 256) disparities per lane, so a D128
// scanline is one whole warp (4-byte coalesced loads and stores, prev_min in one redux instruction) and a
// step's instruction chain is ~4x shorter than with 16 disparities per lane. Meant first for the horizontal
// scanlines: only H of them, each W steps long, so their per-step latency bounds the launch.
// The costs are staged through shared memory with cp.async, kStageSteps steps per chunk, double-buffered:
// chunk c + 1 is requested when chunk c starts, so one wait per chunk covers a whole chunk of compute.
// (A register ring of loads issued k steps ahead does not hide the latency: the few scoreboards a warp
// has make each use wait for a recent load, which measured ~0.5 us per horizontal step on an H200.)
// Slots are lane-private ([buffer][step][lane] words: conflict-free reads), so no warp barrier is needed.
constexpr int kStageSteps = 16;

template <int K>
__device__ S3D_FORCEINLINE void load_shared_bytes(const std::uint8_t* p, unsigned (&w)[K / 4]) {
  if constexpr (K == 4) {
    w[0] = *reinterpret_cast<const unsigned*>(p);
  } else if constexpr (K == 8) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    w[0] = v.x;
    w[1] = v.y;
  } else {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
  }
}
template <int K>
__device__ S3D_FORCEINLINE void store_words(std::uint8_t* p, const unsigned (&w)[K / 4]) {
  if constexpr (K == 4) {
    *reinterpret_cast<unsigned*>(p) = w[0];
  } else if constexpr (K == 8) {
    *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  } else {
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

/// Asynchronous K-byte copy global -> shared (cp.async, sm_80+); older GPUs copy synchronously (same bytes).
template <int K>
__device__ S3D_FORCEINLINE void stage_copy(unsigned to_shared, const std::uint8_t* from) {
#if S3D_CUDA_ARCH >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to_shared), "l"(from), "n"(K) : "memory");
#else
  if constexpr (K == 4) {
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(to_shared), "r"(*reinterpret_cast<const unsigned*>(from)) : "memory");
  } else if constexpr (K == 8) {
    const uint2 v = *reinterpret_cast<const uint2*>(from);
    asm volatile("st.shared.v2.u32 [%0], {%1, %2};\n" ::"r"(to_shared), "r"(v.x), "r"(v.y) : "memory");
  } else {
    const uint4 v = *reinterpret_cast<const uint4*>(from);
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(to_shared), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }
#endif
}
__device__ S3D_FORCEINLINE void stage_commit() {
#if S3D_CUDA_ARCH >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most N committed groups are still in flight.
template <int N>
__device__ S3D_FORCEINLINE void stage_wait() {
#if S3D_CUDA_ARCH >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/// Shared-memory bytes one warp stages with for K disparities per lane.
template <int K>
constexpr int stage_bytes_per_warp() {
  return 2 * kStageSteps * 32 * K;
}

/// One scanline of any direction from (x, y) over the cost volume, K disparities per lane, G = pitch / K.
/// `stage`: this warp's stage_bytes_per_warp<K>() bytes of shared memory (16-byte aligned). Full chunks run
/// kStageSteps straight-line steps (no per-step branch, so the next step's shuffles and shared loads overlap
/// this step's reduction); the last, partial chunk runs a plain loop.
template <int G, int K>
__device__ void scan_cost_narrow(const std::uint8_t* __restrict__ cost, const MatchSpec& s, int x, int y, int dx,
                                 int dy, std::uint8_t* __restrict__ out, int pitch, unsigned mask, int glane,
                                 std::uint8_t* stage) {
  constexpr int kWords = K / 4;
  constexpr int kChunkBytes = kStageSteps * 32 * K;
  const int W = s.width, H = s.height, D = s.disparities;
  const int d0 = glane * K;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int steps = scanline_steps(x, y, dx, dy, W, H);
  const std::ptrdiff_t stride = (static_cast<std::ptrdiff_t>(dy) * W + dx) * pitch;
  const std::uint8_t* src = cost + (static_cast<std::ptrdiff_t>(y) * W + x) * pitch + d0;
  std::uint8_t* dst = out + (static_cast<std::ptrdiff_t>(y) * W + x) * pitch + d0;
  std::uint8_t* slot0 = stage + lane * K;
  const unsigned slot0_shared = static_cast<unsigned>(__cvta_generic_to_shared(slot0));
  auto request = [&](int chunk) {
    const unsigned buf = slot0_shared + (chunk & 1) * kChunkBytes;
    const int k0 = chunk * kStageSteps;
    const std::uint8_t* from = src + k0 * stride;
#pragma unroll
    for (int i = 0; i < kStageSteps; ++i) {
      if (k0 + i < steps) stage_copy<K>(buf + i * 32 * K, from);
      from += stride;
    }
    stage_commit();
  };
  const PackedLane<K> pl(d0, D);
  unsigned L[K / 2];
  int prev_min;
  pl.start(L, prev_min);
  const unsigned p1x2 = static_cast<unsigned>(s.p1) * 0x10001u;
  auto step = [&](const std::uint8_t* from_shared) {
    unsigned q[kWords];
    load_shared_bytes<K>(from_shared, q);
    unsigned c[K / 2];
#pragma unroll
    for (int w = 0; w < kWords; ++w) unpack_pairs(q[w], c[2 * w], c[2 * w + 1]);
    path_update_packed<G, K>(L, c, prev_min, pl, p1x2, s.p2, mask, glane);
#pragma unroll
    for (int w = 0; w < kWords; ++w) q[w] = pack_pairs(L[2 * w], L[2 * w + 1]);
    store_words<K>(dst, q);
    dst += stride;
  };
  request(0);
  const int chunks = (steps + kStageSteps - 1) / kStageSteps;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    request(chunk + 1);  // into the other buffer, whose chunk this lane has finished reading
    stage_wait<1>();
    const std::uint8_t* buf = slot0 + (chunk & 1) * kChunkBytes;
    const int in_chunk = min(kStageSteps, steps - chunk * kStageSteps);  // uniform over the group
    if (in_chunk == kStageSteps) {
#pragma unroll
      for (int i = 0; i < kStageSteps; ++i) step(buf + i * 32 * K);
    } else {
      for (int i = 0; i < in_chunk; ++i) step(buf + i * 32 * K);
    }
  }
  stage_wait<0>();
}

/// Lanes per scanline of the narrow layout for a pitch of G * 16 bytes: K = max(4, pitch / 32).
template <int G>
struct Narrow {
  static constexpr int kK = G * kPK / 32 > 4 ? G * kPK / 32 : 4;
  static constexpr int kG = G * kPK / kK;
};

/// `narrow`: PerPathLanes as int (kWide: every direction 16 disparities per lane; kNarrowHorizontal: the
/// horizontal ones narrow; kNarrowAll: every direction narrow).
template <int G>
__global__ void __launch_bounds__(kPerPathBlock) aggregate_cost_kernel(const std::uint8_t* __restrict__ cost,
                                                                       MatchSpec s, std::uint8_t* __restrict__ paths,
                                                                       int pitch, std::size_t volume_bytes, int narrow) {
  constexpr int kGN = Narrow<G>::kG, kKN = Narrow<G>::kK;
  const int p = static_cast<int>(blockIdx.y);
  int dx, dy;
  path_direction(p, dx, dy);
  const bool nar = narrow == static_cast<int>(PerPathLanes::kNarrowAll) ||
                   (narrow == static_cast<int>(PerPathLanes::kNarrowHorizontal) && dy == 0);
  const int g = nar ? kGN : G;
  const int lane = threadIdx.x & 31;
  const int glane = lane & (g - 1);
  const unsigned mask = (g == 32) ? 0xffffffffu : (((1u << g) - 1u) << (lane - glane));
  const int scan = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / g);
  int x, y;
  if (!scan_start(scan, s.width, s.height, dx, dy, x, y)) return;
  std::uint8_t* out = paths + static_cast<std::size_t>(p) * volume_bytes;
  if (nar) {
    __shared__ __align__(16) std::uint8_t stage[kPerPathBlock / 32][stage_bytes_per_warp<kKN>()];
    scan_cost_narrow<kGN, kKN>(cost, s, x, y, dx, dy, out, pitch, mask, glane, stage[threadIdx.x / 32]);
  } else {
    scan_cost16<G>(cost, s, x, y, dx, dy, out, pitch, mask, glane);
  }
}

template <int G>
void launch_per_path(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint8_t* cost,
                     std::uint8_t* paths, StreamHandle stream, PerPathLanes lanes) {
  const int pitch = G * kPK;
  const std::size_t vbytes = static_cast<std::size_t>(s.width) * s.height * pitch;
  const int scans = s.paths > 4 ? s.width + s.height - 1 : std::max(s.width, s.height);
  if (cost) {
    if (lanes == PerPathLanes::kDefault) lanes = default_per_path_lanes(s);
    const int g = lanes == PerPathLanes::kWide ? G : Narrow<G>::kG;
    const dim3 grid(grid_size(static_cast<std::size_t>(scans) * g, kPerPathBlock), static_cast<unsigned>(s.paths));
    const dim3 tiles(grid_size(static_cast<std::size_t>(s.width), kCostTilePixels), static_cast<unsigned>(s.height));
    cost_volume_kernel<G><<<tiles, 32 * G, 0, stream>>>(ref, target, s, cost);
    S3D_CUDA_CHECK_LAUNCH();
    aggregate_cost_kernel<G><<<grid, kPerPathBlock, 0, stream>>>(cost, s, paths, pitch, vbytes, static_cast<int>(lanes));
  } else {
    const dim3 grid(grid_size(static_cast<std::size_t>(scans) * G, kPerPathBlock), static_cast<unsigned>(s.paths));
    aggregate_per_path_kernel<G><<<grid, kPerPathBlock, 0, stream>>>(ref, target, s, paths, pitch, vbytes);
  }
  S3D_CUDA_CHECK_LAUNCH();
}

int per_path_lanes(int disparities) {
  int g = 1;
  while (g * kPK < disparities) g *= 2;
  return g;
}

}  // namespace

bool per_path_fits(const MatchSpec& spec) {
  return spec.lanes == 0 && spec.disparities <= 32 * kPK && spec.max_cost + spec.p2 <= 255 && spec.paths <= 8;
}

int per_path_pitch(int disparities) { return per_path_lanes(disparities) * kPK; }

PerPathLanes default_per_path_lanes(const MatchSpec&) { return PerPathLanes::kNarrowAll; }

std::size_t per_path_cost_bytes(const MatchSpec& spec) {
  return static_cast<std::size_t>(spec.width) * spec.height * per_path_pitch(spec.disparities);
}

std::size_t per_path_bytes(const MatchSpec& spec) {
  return static_cast<std::size_t>(spec.paths) * spec.width * spec.height * per_path_pitch(spec.disparities);
}

void aggregate_per_path(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
                        std::uint8_t* d_cost, std::uint8_t* d_paths, StreamHandle stream, PerPathLanes lanes) {
  if (!per_path_fits(spec)) throw InvalidArgument("aggregate_per_path: path costs do not fit a byte");
  switch (per_path_lanes(spec.disparities)) {
    case 1: return launch_per_path<1>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 2: return launch_per_path<2>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 4: return launch_per_path<4>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 8: return launch_per_path<8>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 16: return launch_per_path<16>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 32: return launch_per_path<32>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    default: throw InvalidArgument("aggregate_per_path: no kernel for the disparity range");
  }
}

namespace {
}  // namespace

int volume_pitch(int disparities, int lanes) {
  const Layout l = layout(disparities, lanes);
  return l.g * l.k;
}

void aggregate(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
               std::uint16_t* d_volume_a, std::uint16_t* d_volume_b, std::uint16_t* d_volume_c,
               const AggregateStreams& streams) {
  const Layout l = layout(spec.disparities, spec.lanes);
  auto* a = d_volume_a;
  auto* b = d_volume_b;
  auto* c = d_volume_c;
#define S3D_SGM_LAYOUT(G, K) \
  if (l.g == G && l.k == K) return launch<G, K>(d_ref, d_target, spec, a, b, c, streams)
  S3D_SGM_LAYOUT(4, 4);
  S3D_SGM_LAYOUT(4, 8);
  S3D_SGM_LAYOUT(4, 16);
  S3D_SGM_LAYOUT(4, 32);
  S3D_SGM_LAYOUT(8, 4);
  S3D_SGM_LAYOUT(8, 8);
  S3D_SGM_LAYOUT(8, 16);
  S3D_SGM_LAYOUT(8, 32);
  S3D_SGM_LAYOUT(16, 4);
  S3D_SGM_LAYOUT(16, 8);
  S3D_SGM_LAYOUT(16, 16);
  S3D_SGM_LAYOUT(16, 32);
  S3D_SGM_LAYOUT(32, 4);
  S3D_SGM_LAYOUT(32, 8);
  S3D_SGM_LAYOUT(32, 16);
  S3D_SGM_LAYOUT(32, 32);
#undef S3D_SGM_LAYOUT
  throw InvalidArgument("aggregate: no kernel for the lane layout");
}

void add_volumes(std::uint16_t* d_a, const std::uint16_t* d_b, std::size_t count, StreamHandle stream) {
  add_volumes_kernel<<<grid_size(count, 256), 256, 0, stream>>>(d_a, d_b, count);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
