#pragma once
// Internal (CUDA backend): the uint16 path aggregation, the fallback for path costs that do not fit a byte.
// A group of G lanes walks one scanline of one direction; lane t holds disparities [t*K, t*K+K) in
// registers, so the d+-1 neighbours cross lanes only at the group's ends (two shuffles) and min_k L is a
// log2(G)-step butterfly: small G keeps the per-step dependency chain short (the horizontal paths have
// only H scanlines, each W steps long: latency, not bandwidth, bounds them). Costs are computed on the fly
// from the census codes (never stored) and the next pixel's codes and partial sums are loaded one step
// ahead, so global-memory latency stays off the chain. The paths are never stored: the 6 vertical and
// diagonal paths add into volume A (the first assigns); the 2 horizontal ones, in one kernel on a second
// stream running concurrently, assign into volumes B and C; WTA reads A + B + C.
// Same recurrence as the CPU (aggregate_math.hpp), so the sums are identical. The library instantiates the
// automatic layouts (aggregate_fallback_cuda.cu); the forced ones are experiments (src/stereo/experimental).
#include <cstdint>

#include "aggregate_math.hpp"
#include "backend.hpp"
#include "s3d/core/cuda_check.cuh"
#include "scanlines_cuda.cuh"

namespace s3d::stereo::detail::cuda {
namespace {

using ::s3d::detail::grid_size;

constexpr int kBig = 1 << 24;  // outside [0, D): never a minimum, never overflows int

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
    auto load = [&](int px, int py, std::uint64_t& r, std::uint64_t(&t)[K], unsigned int(&old)[kPairs]) {
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
      unsigned int* v2 =
          reinterpret_cast<unsigned int*>(volume + (static_cast<std::ptrdiff_t>(y) * W + x) * vpitch + d0);
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

/// One direction (dx, dy) into `volume`; with `volume2`, scanlines [H, 2H) walk the opposite horizontal
/// direction into volume2 (both assign: the two horizontal paths run concurrently, without read-modify-write).
template <int G, int K>
__global__ void __launch_bounds__(128)
    aggregate_path_kernel(const std::uint64_t* __restrict__ ref, const std::uint64_t* __restrict__ target, MatchSpec s,
                          int dx, int dy, std::uint16_t* __restrict__ volume, std::uint16_t* __restrict__ volume2,
                          int vpitch, bool assign) {
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
/// the registers in check, G as small as that allows keeps the shuffle chain short, because the per-step
/// latency of a single warp dominates the scans (docs/PERFORMANCE.md). lanes = 4/8/16/32 forces G (K = 4, 8,
/// 16 or 32, the smallest that covers D): an experiment knob for bench_sgm.
inline Layout layout(int disparities, int lanes) {
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
void launch_fallback(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint16_t* vol_a,
                     std::uint16_t* vol_b, std::uint16_t* vol_c, const AggregateStreams& st) {
  const unsigned block = 128;
  const int vp = G * K;
  // the two horizontal paths on the side stream, into B and C
  S3D_CUDA_CHECK(cudaEventRecord(st.fork, st.main));
  try {
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
  } catch (...) {
    // Without the join the side stream may still write B and C after the caller frees them (ordered on the
    // main stream only), so wait for it here; its own error, if any, is the one already being thrown.
    if (cudaStreamSynchronize(st.side) != cudaSuccess) cudaGetLastError();
    throw;
  }
}

}  // namespace
}  // namespace s3d::stereo::detail::cuda
