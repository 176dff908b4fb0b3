// Winner-take-all, CUDA backend: one warp per pixel, lanes hold K consecutive disparities; (cost, index)
// minimum and the second minimum outside best+-1 by butterfly reduction. Same decisions as the CPU (wta_math),
// and, on request, the right view's winners from the same sums (LrMethod::kVolume: wta_math.hpp's right_key).
#include <climits>

#include "backend.hpp"
#include "s3d/core/cuda_check.cuh"
#include "sgm_paths_cuda.cuh"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

constexpr unsigned kFull = 0xffffffffu;

__global__ void wta_kernel(const std::uint16_t* __restrict__ volume, const std::uint16_t* __restrict__ volume_b,
                           const std::uint16_t* __restrict__ volume_c, int vpitch, MatchSpec s, float* disp,
                           std::ptrdiff_t disp_pitch, float* conf, std::ptrdiff_t conf_pitch,
                           std::uint32_t* right_keys) {
  const int lane = threadIdx.x & 31;
  const int pix = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);  // < 2^26 (validated)
  const int W = s.width, D = s.disparities;
  if (pix >= W * s.height) return;
  const int y = pix / W, x = pix - y * W;
  const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(pix) * vpitch;
  const std::uint16_t* v = volume + off;
  const std::uint16_t* vb = volume_b ? volume_b + off : nullptr;
  const std::uint16_t* vc = volume_c ? volume_c + off : nullptr;
  auto cost = [&](int d) {
    return vb ? static_cast<int>(static_cast<std::uint16_t>(v[d] + vb[d] + vc[d])) : static_cast<int>(v[d]);
  };
  const int K = (vpitch + 31) / 32;
  int best = INT_MAX, best_d = INT_MAX;
  for (int j = 0; j < K; ++j) {
    const int d = lane * K + j;
    if (d < D) {
      const int c = cost(d);
      if (c < best) {
        best = c;
        best_d = d;
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const int ob = __shfl_xor_sync(kFull, best, o);
    const int od = __shfl_xor_sync(kFull, best_d, o);
    if (ob < best || (ob == best && od < best_d)) {
      best = ob;
      best_d = od;
    }
  }
  int second = INT_MAX;
  for (int j = 0; j < K; ++j) {
    const int d = lane * K + j;
    if (d < D && (d < best_d - 1 || d > best_d + 1)) second = min(second, cost(d));
  }
  for (int o = 16; o > 0; o >>= 1) second = min(second, __shfl_xor_sync(kFull, second, o));
  if (right_keys) {  // this fallback path folds the right view's keys straight into global memory
    for (int j = 0; j < K; ++j) {
      const int d = lane * K + j;
      const int xr = x - s.min_disparity - d;
      if (d < D && xr >= 0 && xr < W)
        atomicMin(right_keys + static_cast<std::ptrdiff_t>(y) * W + xr, right_key(cost(d), d));
    }
  }
  if (lane != 0) return;
  const bool ok = target_inside(x, best_d, s.min_disparity, s.sign, W) && passes_uniqueness(best, second, s.uniqueness);
  float out = kInvalidDisparity;
  if (ok) {
    const int sm = best_d > 0 ? cost(best_d - 1) : 0;
    const int sp = best_d < D - 1 ? cost(best_d + 1) : 0;
    out = wta_disparity(best_d, D, s.min_disparity, s.subpixel, sm, best, sp);
  }
  disp[y * disp_pitch + x] = out;
  if (conf) conf[y * conf_pitch + x] = ok ? wta_confidence(best, second) : 0.0f;
}

/// Per-path pipeline: G lanes per pixel, lane t sums disparities [16t, 16t+16) over the directions' uint8
/// volumes (16-byte loads; bytes added pairwise in 16-bit halves: <= 8 * 255 fits), then the same decisions.
/// c[] returns the lane's 16 sums (the right view's keys are folded from them).
template <int G>
__device__ __forceinline__ void wta_per_path_pixel(const std::uint8_t* __restrict__ paths, std::size_t volume_bytes,
                                                   int pitch, const MatchSpec& s, int pix, float* disp,
                                                   std::ptrdiff_t disp_pitch, float* conf, std::ptrdiff_t conf_pitch,
                                                   int (&c)[16]) {
  const int lane = threadIdx.x & 31;
  const int glane = lane % G;
  const unsigned mask = (G == 32) ? kFull : (((1u << G) - 1u) << (lane - glane));
  const int W = s.width, D = s.disparities;
  const int d0 = glane * 16;
  const std::uint8_t* src = paths + static_cast<std::size_t>(pix) * pitch + d0;
  unsigned even[4] = {0u, 0u, 0u, 0u}, odd[4] = {0u, 0u, 0u, 0u};
  // every direction's load issued before the first is used (paths <= 8: per_path_fits)
  uint4 v[8];
#pragma unroll
  for (int p = 0; p < 8; ++p)
    if (p < s.paths) v[p] = __ldg(reinterpret_cast<const uint4*>(src + static_cast<std::size_t>(p) * volume_bytes));
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    if (p >= s.paths) break;
    const unsigned w[4] = {v[p].x, v[p].y, v[p].z, v[p].w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      even[i] += w[i] & 0x00ff00ffu;
      odd[i] += (w[i] >> 8) & 0x00ff00ffu;
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    c[4 * i] = static_cast<int>(even[i] & 0xffffu);
    c[4 * i + 1] = static_cast<int>(odd[i] & 0xffffu);
    c[4 * i + 2] = static_cast<int>(even[i] >> 16);
    c[4 * i + 3] = static_cast<int>(odd[i] >> 16);
  }
  int best = INT_MAX, best_d = INT_MAX;
#pragma unroll
  for (int j = 0; j < 16; ++j)
    if (d0 + j < D && c[j] < best) {
      best = c[j];
      best_d = d0 + j;
    }
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) {
    const int ob = __shfl_xor_sync(mask, best, o, G);
    const int od = __shfl_xor_sync(mask, best_d, o, G);
    if (ob < best || (ob == best && od < best_d)) {
      best = ob;
      best_d = od;
    }
  }
  int second = INT_MAX, vm = 0, vp = 0;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int d = d0 + j;
    if (d < D && (d < best_d - 1 || d > best_d + 1)) second = min(second, c[j]);
    if (d == best_d - 1) vm = c[j];
    if (d == best_d + 1) vp = c[j];
  }
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) second = min(second, __shfl_xor_sync(mask, second, o, G));
  const int owner_m = best_d > 0 ? (best_d - 1) / 16 : 0;
  const int owner_p = min((best_d + 1) / 16, G - 1);
  const int sm_all = __shfl_sync(mask, vm, owner_m, G);
  const int sp_all = __shfl_sync(mask, vp, owner_p, G);
  if (glane != 0) return;
  const int y = pix / W, x = pix - y * W;
  const bool ok = target_inside(x, best_d, s.min_disparity, s.sign, W) && passes_uniqueness(best, second, s.uniqueness);
  float out = kInvalidDisparity;
  if (ok) {
    const int sm = best_d > 0 ? sm_all : 0;
    const int sp = best_d < D - 1 ? sp_all : 0;
    out = wta_disparity(best_d, D, s.min_disparity, s.subpixel, sm, best, sp);
  }
  disp[y * disp_pitch + x] = out;
  if (conf) conf[y * conf_pitch + x] = ok ? wta_confidence(best, second) : 0.0f;
}

template <int G>
__global__ void wta_per_path_kernel(const std::uint8_t* __restrict__ paths, std::size_t volume_bytes, int pitch,
                                    MatchSpec s, float* disp, std::ptrdiff_t disp_pitch, float* conf,
                                    std::ptrdiff_t conf_pitch) {
  const long long pix_ll = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / G;
  if (pix_ll >= static_cast<long long>(s.width) * s.height) return;  // whole groups leave together
  int c[16];
  wta_per_path_pixel<G>(paths, volume_bytes, pitch, s, static_cast<int>(pix_ll), disp, disp_pitch, conf, conf_pitch, c);
}

/// Pixels of one row segment of wta_per_path_right_kernel: its right keys fit shared memory
/// (kRightSegment + D - 1 <= 767 for D <= 512).
constexpr int kRightSegment = 256;
constexpr int kRightBlock = 256;

/// The same winner-take-all over one row segment (blockIdx.y = row), which also folds the right view's keys
/// (wta_math.hpp's right_key) of the segment's left pixels: in shared memory first, then one global atomicMin
/// per right pixel the segment reaches (segments overlap by D - 1 right pixels).
template <int G>
__global__ void __launch_bounds__(kRightBlock)
    wta_per_path_right_kernel(const std::uint8_t* __restrict__ paths, std::size_t volume_bytes, int pitch, MatchSpec s,
                              float* disp, std::ptrdiff_t disp_pitch, float* conf, std::ptrdiff_t conf_pitch,
                              std::uint32_t* right_keys) {
  extern __shared__ std::uint32_t keys[];  // kRightSegment + D - 1
  const int W = s.width, D = s.disparities, y = blockIdx.y;
  const int seg = blockIdx.x * kRightSegment;
  const int span = kRightSegment + D - 1;
  for (int i = threadIdx.x; i < span; i += blockDim.x) keys[i] = kNoRightKey;
  __syncthreads();
  constexpr int kPixels = kRightBlock / G;  // pixels of one pass
  const int d0 = (threadIdx.x % G) * 16;
  for (int k = 0; k < kRightSegment; k += kPixels) {
    const int x = seg + k + static_cast<int>(threadIdx.x) / G;
    if (x >= W) break;  // whole groups leave together
    int c[16];
    wta_per_path_pixel<G>(paths, volume_bytes, pitch, s, y * W + x, disp, disp_pitch, conf, conf_pitch, c);
    // right pixel x - min_disparity - d at keys[x - seg - d + D - 1]
    const int base = x - seg + D - 1 - d0;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      if (d0 + j < D) atomicMin(keys + base - j, right_key(c[j], d0 + j));
  }
  __syncthreads();
  const int xr0 = seg - s.min_disparity - (D - 1);
  std::uint32_t* row = right_keys + static_cast<std::ptrdiff_t>(y) * W;
  for (int i = threadIdx.x; i < span; i += blockDim.x) {
    const int xr = xr0 + i;
    const std::uint32_t key = keys[i];
    if (key != kNoRightKey && xr >= 0 && xr < W) atomicMin(row + xr, key);
  }
}

__global__ void right_disparity_kernel(std::uint32_t* keys_then_disparity, int width, int n, int min_disparity,
                                       int right_edge) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float d = right_view_disparity(keys_then_disparity[i], i % width, min_disparity, right_edge);
  reinterpret_cast<float*>(keys_then_disparity)[i] = d;
}

template <int G>
void launch_wta_per_path(const std::uint8_t* paths, const MatchSpec& s, float* disp, std::ptrdiff_t disp_pitch,
                         float* conf, std::ptrdiff_t conf_pitch, std::uint32_t* right_keys, StreamHandle stream) {
  const int pitch = per_path_pitch(s.disparities);
  const std::size_t vbytes = static_cast<std::size_t>(s.width) * s.height * pitch;
  if (right_keys) {
    const dim3 grid(grid_size(s.width, kRightSegment), s.height);
    const std::size_t smem = (kRightSegment + s.disparities - 1) * sizeof(std::uint32_t);
    wta_per_path_right_kernel<G>
        <<<grid, kRightBlock, smem, stream>>>(paths, vbytes, pitch, s, disp, disp_pitch, conf, conf_pitch, right_keys);
    S3D_CUDA_CHECK_LAUNCH();
    return;
  }
  const std::size_t threads = static_cast<std::size_t>(s.width) * s.height * G;
  const unsigned block = 256;
  wta_per_path_kernel<G>
      <<<grid_size(threads, block), block, 0, stream>>>(paths, vbytes, pitch, s, disp, disp_pitch, conf, conf_pitch);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace

void wta(const std::uint16_t* d_volume, const std::uint16_t* d_volume_b, const std::uint16_t* d_volume_c,
         const MatchSpec& spec, float* d_disparity, std::ptrdiff_t disp_pitch, float* d_confidence,
         std::ptrdiff_t conf_pitch, StreamHandle stream, std::uint32_t* d_right_keys) {
  const std::size_t threads = static_cast<std::size_t>(spec.width) * spec.height * 32;
  const unsigned block = 256;
  wta_kernel<<<grid_size(threads, block), block, 0, stream>>>(
      d_volume, d_volume_b, d_volume_c, volume_pitch(spec.disparities, spec.lanes), spec, d_disparity, disp_pitch,
      d_confidence, conf_pitch, d_right_keys);
  S3D_CUDA_CHECK_LAUNCH();
}

void right_disparity_from_keys(std::uint32_t* d_keys_then_disparity, const MatchSpec& spec, StreamHandle stream) {
  const int n = spec.width * spec.height;
  const unsigned block = 256;
  right_disparity_kernel<<<grid_size(n, block), block, 0, stream>>>(d_keys_then_disparity, spec.width, n,
                                                                    spec.min_disparity, spec.right_edge);
  S3D_CUDA_CHECK_LAUNCH();
}

void wta_per_path(const std::uint8_t* d_paths, const MatchSpec& spec, float* d_disparity, std::ptrdiff_t disp_pitch,
                  float* d_confidence, std::ptrdiff_t conf_pitch, StreamHandle stream, std::uint32_t* d_right_keys) {
  if (!per_path_fits(spec)) throw InvalidArgument("wta_per_path: path costs do not fit a byte");
  switch (per_path_pitch(spec.disparities) / 16) {
    case 1:
      return launch_wta_per_path<1>(d_paths, spec, d_disparity, disp_pitch, d_confidence, conf_pitch, d_right_keys,
                                    stream);
    case 2:
      return launch_wta_per_path<2>(d_paths, spec, d_disparity, disp_pitch, d_confidence, conf_pitch, d_right_keys,
                                    stream);
    case 4:
      return launch_wta_per_path<4>(d_paths, spec, d_disparity, disp_pitch, d_confidence, conf_pitch, d_right_keys,
                                    stream);
    case 8:
      return launch_wta_per_path<8>(d_paths, spec, d_disparity, disp_pitch, d_confidence, conf_pitch, d_right_keys,
                                    stream);
    case 16:
      return launch_wta_per_path<16>(d_paths, spec, d_disparity, disp_pitch, d_confidence, conf_pitch, d_right_keys,
                                     stream);
    case 32:
      return launch_wta_per_path<32>(d_paths, spec, d_disparity, disp_pitch, d_confidence, conf_pitch, d_right_keys,
                                     stream);
    default:
      throw InvalidArgument("wta_per_path: no kernel for the disparity range");
  }
}

}  // namespace s3d::stereo::detail::cuda
