// Aggregation variants kept for the tests and bench_sgm, outside the library: the on-the-fly per-path kernel
// (costs recomputed from the census codes by every direction), the wide and narrow-horizontal lane layouts
// over the cost volume, and the forced lane layouts of the uint16 fallback. Each computes the same sums as
// the library's kernels (the tests check it against the CPU).
//
// On-the-fly variant: each lane owns kPK = 16 consecutive disparities of one scanline (G = pitch / 16 lanes per
// scanline), so its 16 path costs leave in one 16-byte store. Vertical and diagonal scanlines load the next
// pixel's census codes one step ahead. Horizontal scanlines slide: from x to x + dx the target column of d
// becomes that of d + sign*dx, so the lanes shift their codes by one (one shuffle across the lane boundary)
// and only the edge lane needs a new code per step; those and the reference codes are loaded G steps at a
// time (one per lane), a chunk ahead, and picked by shuffles: the W-step horizontal chain never waits on
// global memory.
#include "aggregate_variants.hpp"

#include <algorithm>

#include "aggregate_fallback_cuda.cuh"
#include "aggregate_paths_cuda.cuh"
#include "s3d/core/cuda_check.cuh"
#include "sgm_paths_cuda.cuh"

namespace s3d::stereo::detail::cuda::experimental {
using ::s3d::detail::grid_size;
namespace {

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

/// blockIdx.y = direction (path_direction order: the two horizontal ones, the longest chains, start first).
template <int G>
__global__ void __launch_bounds__(kPerPathBlock)
    aggregate_per_path_kernel(const std::uint64_t* __restrict__ ref, const std::uint64_t* __restrict__ target,
                              MatchSpec s, std::uint8_t* __restrict__ paths, int pitch, std::size_t volume_bytes) {
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

/// `narrow`: PerPathLanes as int (kWide: every direction 16 disparities per lane; kNarrowHorizontal: the
/// horizontal ones narrow; kNarrowAll: every direction narrow).
template <int G>
__global__ void __launch_bounds__(kPerPathBlock)
    aggregate_cost_kernel(const std::uint8_t* __restrict__ cost, MatchSpec s, std::uint8_t* __restrict__ paths,
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
void launch_variant(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint8_t* cost,
                    std::uint8_t* paths, StreamHandle stream, PerPathLanes lanes) {
  const int pitch = G * kPK;
  const std::size_t vbytes = static_cast<std::size_t>(s.width) * s.height * pitch;
  const int scans = s.paths > 4 ? s.width + s.height - 1 : std::max(s.width, s.height);
  if (cost) {
    const int g = lanes == PerPathLanes::kWide ? G : Narrow<G>::kG;
    const dim3 grid(grid_size(static_cast<std::size_t>(scans) * g, kPerPathBlock), static_cast<unsigned>(s.paths));
    const dim3 tiles(grid_size(static_cast<std::size_t>(s.width), kCostTilePixels), static_cast<unsigned>(s.height));
    cost_volume_kernel<G><<<tiles, 32 * G, 0, stream>>>(ref, target, s, cost);
    S3D_CUDA_CHECK_LAUNCH();
    aggregate_cost_kernel<G>
        <<<grid, kPerPathBlock, 0, stream>>>(cost, s, paths, pitch, vbytes, static_cast<int>(lanes));
  } else {
    const dim3 grid(grid_size(static_cast<std::size_t>(scans) * G, kPerPathBlock), static_cast<unsigned>(s.paths));
    aggregate_per_path_kernel<G><<<grid, kPerPathBlock, 0, stream>>>(ref, target, s, paths, pitch, vbytes);
  }
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace

PerPathLanes default_per_path_lanes(const MatchSpec&) { return PerPathLanes::kNarrowAll; }

void aggregate_per_path(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
                        std::uint8_t* d_cost, std::uint8_t* d_paths, StreamHandle stream, PerPathLanes lanes) {
  if (lanes == PerPathLanes::kDefault) lanes = default_per_path_lanes(spec);
  if (d_cost && lanes == PerPathLanes::kNarrowAll)  // the library's own path
    return cuda::aggregate_per_path(d_ref, d_target, spec, d_cost, d_paths, stream);
  if (!per_path_fits(spec)) throw InvalidArgument("aggregate_per_path: path costs do not fit a byte");
  switch (per_path_lanes(spec.disparities)) {
    case 1:
      return launch_variant<1>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 2:
      return launch_variant<2>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 4:
      return launch_variant<4>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 8:
      return launch_variant<8>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 16:
      return launch_variant<16>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    case 32:
      return launch_variant<32>(d_ref, d_target, spec, d_cost, d_paths, stream, lanes);
    default:
      throw InvalidArgument("aggregate_per_path: no kernel for the disparity range");
  }
}

void aggregate(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
               std::uint16_t* d_volume_a, std::uint16_t* d_volume_b, std::uint16_t* d_volume_c,
               const AggregateStreams& streams) {
  if (spec.lanes == 0)  // the library's own layouts
    return cuda::aggregate(d_ref, d_target, spec, d_volume_a, d_volume_b, d_volume_c, streams);
  const Layout l = layout(spec.disparities, spec.lanes);
#define S3D_SGM_LAYOUT(G, K) \
  if (l.g == G && l.k == K)  \
  return launch_fallback<G, K>(d_ref, d_target, spec, d_volume_a, d_volume_b, d_volume_c, streams)
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

}  // namespace s3d::stereo::detail::cuda::experimental
