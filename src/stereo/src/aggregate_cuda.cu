// SGM path aggregation, CUDA backend.
// One warp per scanline of one direction; lane t holds disparities [t*K, t*K+K) in registers (K = pitch/32),
// so the d+-1 neighbours cross lanes only at the ends (two shuffles) and min_k L is a 5-step butterfly.
// Costs are computed on the fly from the census codes (never stored). The paths are not stored either:
// each path kernel adds its L_r into ONE uint16 volume (the first assigns), in stream order, so the volume
// is written once per path and read once by the winner-take-all. Same recurrence as the CPU (aggregate_math).
#include <algorithm>

#include "aggregate_math.hpp"
#include "backend.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
namespace {

constexpr int kBig = 1 << 24;  // outside [0, D): never a minimum, never overflows int
constexpr unsigned kFull = 0xffffffffu;

template <int K>
__device__ S3D_FORCEINLINE void store_lanes(std::uint16_t* v, const int (&L)[K], bool assign) {
  if constexpr (K % 2 == 0) {
    auto* v2 = reinterpret_cast<unsigned int*>(v);
#pragma unroll
    for (int j = 0; j < K / 2; ++j) {
      unsigned int lo = static_cast<unsigned int>(L[2 * j]) & 0xffffu;
      unsigned int hi = static_cast<unsigned int>(L[2 * j + 1]) & 0xffffu;
      if (!assign) {
        const unsigned int old = v2[j];
        lo = (lo + (old & 0xffffu)) & 0xffffu;
        hi = (hi + (old >> 16)) & 0xffffu;
      }
      v2[j] = lo | (hi << 16);
    }
  } else {
#pragma unroll
    for (int j = 0; j < K; ++j) v[j] = static_cast<std::uint16_t>(assign ? L[j] : v[j] + L[j]);
  }
}

template <int K>
__global__ void __launch_bounds__(128) aggregate_path_kernel(const std::uint64_t* __restrict__ ref,
                                                             const std::uint64_t* __restrict__ target, MatchSpec s,
                                                             int dx, int dy, std::uint16_t* __restrict__ volume,
                                                             int vpitch, bool assign) {
  const int lane = threadIdx.x & 31;
  const int scan = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int W = s.width, H = s.height, D = s.disparities;
  int x, y;
  if (dy == 0) {
    if (scan >= H) return;
    y = scan;
    x = dx > 0 ? 0 : W - 1;
  } else if (dx == 0) {
    if (scan >= W) return;
    x = scan;
    y = dy > 0 ? 0 : H - 1;
  } else {
    if (scan >= W + H - 1) return;
    if (scan < W) {  // entry row
      x = dx > 0 ? scan : W - 1 - scan;
      y = dy > 0 ? 0 : H - 1;
    } else {  // entry column, corner excluded
      const int k = scan - W + 1;
      x = dx > 0 ? 0 : W - 1;
      y = dy > 0 ? k : H - 1 - k;
    }
  }
  const int d0 = lane * K;
  int L[K];
  int prev_min = 0;
  bool first = true;
  for (; x >= 0 && x < W && y >= 0 && y < H; x += dx, y += dy) {
    const std::ptrdiff_t pix = static_cast<std::ptrdiff_t>(y) * W + x;
    const std::uint64_t r = ref[pix];
    const std::uint64_t* trow = target + static_cast<std::ptrdiff_t>(y) * W;
    int c[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int d = d0 + j;
      c[j] = d < D ? match_cost(r, trow, x, s.min_disparity + d, s.sign, W, s.max_cost) : 0;
    }
    if (first) {
#pragma unroll
      for (int j = 0; j < K; ++j) L[j] = d0 + j < D ? c[j] : kBig;
      first = false;
    } else {
      int left = __shfl_up_sync(kFull, L[K - 1], 1);
      int right = __shfl_down_sync(kFull, L[0], 1);
      if (lane == 0) left = kBig;
      if (lane == 31) right = kBig;
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
    for (int o = 16; o > 0; o >>= 1) m = min(m, __shfl_xor_sync(kFull, m, o));
    prev_min = m;
    store_lanes<K>(volume + pix * vpitch + d0, L, assign);
  }
}

int lanes_per_thread(int disparities) {
  const int need = (disparities + 31) / 32;
  constexpr int kChoices[] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32};
  for (int k : kChoices)
    if (k >= need) return k;
  return 32;
}

template <int K>
void launch(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint16_t* vol,
            StreamHandle stream) {
  for (int p = 0; p < s.paths; ++p) {
    int dx, dy;
    path_direction(p, dx, dy);
    const int scans = dy == 0 ? s.height : (dx == 0 ? s.width : s.width + s.height - 1);
    const unsigned block = 128;
    aggregate_path_kernel<K><<<grid_size(static_cast<std::size_t>(scans) * 32, block), block, 0, stream>>>(
        ref, target, s, dx, dy, vol, 32 * K, p == 0);
    S3D_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

int volume_pitch(int disparities) { return 32 * lanes_per_thread(disparities); }

void aggregate(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
               std::uint16_t* d_volume, StreamHandle stream) {
  switch (lanes_per_thread(spec.disparities)) {
    case 1: return launch<1>(d_ref, d_target, spec, d_volume, stream);
    case 2: return launch<2>(d_ref, d_target, spec, d_volume, stream);
    case 3: return launch<3>(d_ref, d_target, spec, d_volume, stream);
    case 4: return launch<4>(d_ref, d_target, spec, d_volume, stream);
    case 5: return launch<5>(d_ref, d_target, spec, d_volume, stream);
    case 6: return launch<6>(d_ref, d_target, spec, d_volume, stream);
    case 7: return launch<7>(d_ref, d_target, spec, d_volume, stream);
    case 8: return launch<8>(d_ref, d_target, spec, d_volume, stream);
    case 10: return launch<10>(d_ref, d_target, spec, d_volume, stream);
    case 12: return launch<12>(d_ref, d_target, spec, d_volume, stream);
    case 16: return launch<16>(d_ref, d_target, spec, d_volume, stream);
    case 20: return launch<20>(d_ref, d_target, spec, d_volume, stream);
    case 24: return launch<24>(d_ref, d_target, spec, d_volume, stream);
    default: return launch<32>(d_ref, d_target, spec, d_volume, stream);
  }
}

}  // namespace s3d::stereo::detail::cuda
