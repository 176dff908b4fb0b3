// Left-right consistency and confidence masking, CUDA backend (rule shared with the CPU: median_math.hpp).
#include "backend.hpp"
#include "median_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

__global__ void lr_check_kernel(float* left, std::ptrdiff_t pitch, const float* right, int W, int H, float max_diff) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  float* l = left + y * pitch + x;
  if (finite_disparity(*l) && !lr_consistent(*l, x, right + static_cast<std::ptrdiff_t>(y) * W, W, max_diff))
    *l = kInvalidDisparity;
}

__global__ void mask_confidence_kernel(const float* disp, std::ptrdiff_t dp, float* conf, std::ptrdiff_t cp, int W,
                                       int H) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  if (!finite_disparity(disp[y * dp + x])) conf[y * cp + x] = 0.0f;
}

}  // namespace

void lr_check(float* d_left, std::ptrdiff_t left_pitch, const float* d_right, int width, int height, float max_diff,
              StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(width, block.x), grid_size(height, block.y));
  lr_check_kernel<<<grid, block, 0, stream>>>(d_left, left_pitch, d_right, width, height, max_diff);
  S3D_CUDA_CHECK_LAUNCH();
}

void mask_confidence(const float* d_disparity, std::ptrdiff_t disp_pitch, float* d_confidence,
                     std::ptrdiff_t conf_pitch, int width, int height, StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(width, block.x), grid_size(height, block.y));
  mask_confidence_kernel<<<grid, block, 0, stream>>>(d_disparity, disp_pitch, d_confidence, conf_pitch, width, height);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
