// Winner-take-all, CUDA backend: one warp per pixel, lanes hold K consecutive disparities; (cost, index)
// minimum and the second minimum outside best+-1 by butterfly reduction. Same decisions as the CPU (wta_math).
#include <climits>

#include "backend.hpp"
#include "s3d/core/cuda_check.cuh"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

constexpr unsigned kFull = 0xffffffffu;

__global__ void wta_kernel(const std::uint16_t* __restrict__ volume, const std::uint16_t* __restrict__ volume_b,
                           const std::uint16_t* __restrict__ volume_c, int vpitch, MatchSpec s, float* disp,
                           std::ptrdiff_t disp_pitch, float* conf, std::ptrdiff_t conf_pitch) {
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

}  // namespace

void wta(const std::uint16_t* d_volume, const std::uint16_t* d_volume_b, const std::uint16_t* d_volume_c,
         const MatchSpec& spec, float* d_disparity, std::ptrdiff_t disp_pitch,
         float* d_confidence, std::ptrdiff_t conf_pitch, StreamHandle stream) {
  const std::size_t threads = static_cast<std::size_t>(spec.width) * spec.height * 32;
  const unsigned block = 256;
  wta_kernel<<<grid_size(threads, block), block, 0, stream>>>(d_volume, d_volume_b, d_volume_c, volume_pitch(spec.disparities, spec.lanes), spec,
                                                               d_disparity, disp_pitch, d_confidence, conf_pitch);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
