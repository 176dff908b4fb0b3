#pragma once
// Internal (CUDA backend): the per-path uint8 aggregation's kernels (sgm_paths_cuda.cuh says what the
// pipeline computes): the matching-cost volume and the narrow-lane scans over it, which the engine runs, and
// the packed recurrence and byte packing that the experiments (src/stereo/experimental) share with them.
#include <cstddef>
#include <cstdint>

#include "aggregate_math.hpp"
#include "backend.hpp"
#include "s3d/core/cuda_arch.cuh"
#include "scanlines_cuda.cuh"

namespace s3d::stereo::detail::cuda {
namespace {

using ::s3d::detail::warp_reduce_min;

/// Disparities per lane of the wide layout: one 16-byte store of path costs per lane.
constexpr int kPK = 16;

__device__ S3D_FORCEINLINE void store_costs16(std::uint8_t* p, const int (&L)[kPK]) {
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = (static_cast<unsigned>(L[4 * i]) & 0xffu) | ((static_cast<unsigned>(L[4 * i + 1]) & 0xffu) << 8) |
           ((static_cast<unsigned>(L[4 * i + 2]) & 0xffu) << 16) | (static_cast<unsigned>(L[4 * i + 3]) << 24);
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
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
    const unsigned pm = __byte_perm(i == 0 ? left : L[i - 1], L[i], 0x5432);        // (L(d-1), L(d))
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

constexpr unsigned kPerPathBlock = 64;

// Cost-volume variant: the matching costs are computed once per (pixel, d) into a uint8 volume with the
// paths' pitch (target outside the image -> max_cost, as match_cost()), and every direction's step is one
// coalesced 16-byte load per lane (prefetched 3 steps ahead), off the popcount work and the scattered
// census-code loads that the on-the-fly variant repeats per direction.
// One block per 64 pixels of a row: warp w computes disparities [16w, 16w + 16) of the pixels (lane = pixel,
// two rounds of 32), reading the row's target codes from shared memory (lanes read consecutive codes), into a
// shared tile whose rows are padded by 16 bytes (the lanes' 16-byte writes spread over the banks); the tile,
// 64 consecutive pixels of the volume, then leaves in coalesced 16-byte stores. (One thread per 16
// disparities of one pixel reading the codes from global memory touched one cache line per lane and load:
// docs/PERFORMANCE.md has what that cost.)
constexpr int kCostTilePixels = 64;

template <int G>
__global__ void __launch_bounds__(32 * G)
    cost_volume_kernel(const std::uint64_t* __restrict__ ref, const std::uint64_t* __restrict__ target, MatchSpec s,
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

// Narrow lanes over the cost volume: K = 4 (8, 16 for D > 128, 256) disparities per lane, so a D128
// scanline is one whole warp (4-byte coalesced loads and stores, prev_min in one redux instruction) and a
// step's instruction chain is ~4x shorter than with 16 disparities per lane. Meant first for the horizontal
// scanlines: only H of them, each W steps long, so their per-step latency bounds the launch.
// The costs are staged through shared memory with cp.async, kStageSteps steps per chunk, double-buffered:
// chunk c + 1 is requested when chunk c starts, so one wait per chunk covers a whole chunk of compute.
// (A register ring of loads issued k steps ahead does not hide the latency: the few scoreboards a warp
// has make each use wait for a recent load: docs/PERFORMANCE.md.)
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
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(to_shared), "r"(*reinterpret_cast<const unsigned*>(from))
                 : "memory");
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
  static constexpr int kK = (G * kPK / 32 > 4) ? (G * kPK / 32) : 4;
  static constexpr int kG = G * kPK / kK;
};

/// Every direction with narrow lanes (Narrow<G>) over the cost volume: the engine's aggregation.
template <int G>
__global__ void __launch_bounds__(kPerPathBlock)
    aggregate_cost_narrow_kernel(const std::uint8_t* __restrict__ cost, MatchSpec s, std::uint8_t* __restrict__ paths,
                                 int pitch, std::size_t volume_bytes) {
  constexpr int kGN = Narrow<G>::kG, kKN = Narrow<G>::kK;
  const int p = static_cast<int>(blockIdx.y);
  int dx, dy;
  path_direction(p, dx, dy);
  const int lane = threadIdx.x & 31;
  const int glane = lane & (kGN - 1);
  const unsigned mask = (kGN == 32) ? 0xffffffffu : (((1u << kGN) - 1u) << (lane - glane));
  const int scan = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / kGN);
  int x, y;
  if (!scan_start(scan, s.width, s.height, dx, dy, x, y)) return;
  std::uint8_t* out = paths + static_cast<std::size_t>(p) * volume_bytes;
  __shared__ __align__(16) std::uint8_t stage[kPerPathBlock / 32][stage_bytes_per_warp<kKN>()];
  scan_cost_narrow<kGN, kKN>(cost, s, x, y, dx, dy, out, pitch, mask, glane, stage[threadIdx.x / 32]);
}

/// Lanes per scanline of the wide layout: pitch = lanes * kPK >= D.
inline int per_path_lanes(int disparities) {
  int g = 1;
  while (g * kPK < disparities) g *= 2;
  return g;
}

}  // namespace
}  // namespace s3d::stereo::detail::cuda
