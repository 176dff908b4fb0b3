// 3x3 median over valid pixels, CUDA backend (median3x3_at shared with the CPU).
#include "backend.hpp"
#include "median_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

__global__ void median3x3_kernel(const float* in, std::ptrdiff_t ip, float* out, std::ptrdiff_t op, int W, int H) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const float c = in[y * ip + x];
  out[y * op + x] = finite_disparity(c) ? median3x3_at(in, ip, x, y, W, H) : c;
}

}  // namespace

void median3x3(const float* d_in, std::ptrdiff_t in_pitch, float* d_out, std::ptrdiff_t out_pitch, int width,
               int height, StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(width, block.x), grid_size(height, block.y));
  median3x3_kernel<<<grid, block, 0, stream>>>(d_in, in_pitch, d_out, out_pitch, width, height);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
