// Occlusion fill of invalid pixels, CUDA backend: the rule of fill_occlusions_row() (fill_math.hpp, the
// CPU's), computed per pixel instead of per run. One block per row: the row's validity becomes a bit mask in
// shared memory (one ballot per 32 pixels), then every invalid pixel finds its run's valid neighbours, the
// nearest set bits below and above it, and applies the same test with the same float operations. Only
// originally invalid pixels are written and only originally valid ones are read, so the in-place update has
// no read-after-write hazard. (A thread per row scanning serially is far slower: docs/PERFORMANCE.md.)
#include "backend.hpp"
#include "fill_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
namespace {

constexpr int kFillBlock = 256;
constexpr int kMaxMaskWords = 1024;  // rows up to 32768 pixels in shared memory; wider rows use the serial scan

__global__ void __launch_bounds__(kFillBlock) fill_rows_kernel(float* d, std::ptrdiff_t pitch, int width) {
  __shared__ unsigned valid[kMaxMaskWords];
  float* row = d + static_cast<std::ptrdiff_t>(blockIdx.x) * pitch;
  const int words = (width + 31) / 32;
  const int lane = static_cast<int>(threadIdx.x & 31);
  // each warp covers 32 consecutive pixels per round, so every ballot is one whole mask word
  for (int x0 = static_cast<int>(threadIdx.x) - lane; x0 < width; x0 += kFillBlock) {
    const int x = x0 + lane;
    const bool ok = x < width && finite_disparity(row[x]);
    const unsigned word = __ballot_sync(0xffffffffu, ok);
    if (lane == 0) valid[x0 / 32] = word;
  }
  __syncthreads();
  for (int x = static_cast<int>(threadIdx.x); x < width; x += kFillBlock) {
    const int w = x / 32, bit = x & 31;
    if ((valid[w] >> bit) & 1u) continue;
    // nearest valid pixel to the left: highest set bit below x
    int left = -1;
    unsigned below = bit == 0 ? 0u : (valid[w] & ((1u << bit) - 1u));
    for (int k = w; k >= 0; --k) {
      if (below) {
        left = k * 32 + 31 - __clz(below);
        break;
      }
      if (k > 0) below = valid[k - 1];
    }
    if (left < 0) continue;
    // nearest valid pixel to the right: lowest set bit above x
    int right = width;
    unsigned above = bit == 31 ? 0u : (valid[w] & ~((2u << bit) - 1u));
    for (int k = w; k < words; ++k) {
      if (above) {
        right = k * 32 + __ffs(above) - 1;
        break;
      }
      if (k + 1 < words) above = valid[k + 1];
    }
    if (right >= width) continue;
    const float l = row[left];
    const float r = row[right];
    const float step = l > r ? l - r : r - l;
    if (static_cast<float>(right - left - 1) <= step + kFillSlack) row[x] = r < l ? r : l;
  }
}

__global__ void fill_rows_serial_kernel(float* d, std::ptrdiff_t pitch, int width, int height) {
  const int y = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (y < height) fill_occlusions_row(d + y * pitch, width);
}

}  // namespace

void fill_occlusions(float* d_disparity, std::ptrdiff_t pitch, int width, int height, StreamHandle stream) {
  if (width <= 0 || height <= 0) return;
  if (width <= 32 * kMaxMaskWords) {
    fill_rows_kernel<<<height, kFillBlock, 0, stream>>>(d_disparity, pitch, width);
  } else {
    fill_rows_serial_kernel<<<(height + 63) / 64, 64, 0, stream>>>(d_disparity, pitch, width, height);
  }
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
