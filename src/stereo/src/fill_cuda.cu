// Occlusion fill of invalid pixels, CUDA backend: one thread per row running fill_occlusions_row()
// (fill_math.hpp, shared with the CPU), in place. A serial scan per row: rows are independent, a row's
// runs are not. Not yet timed on a GPU (it only reads and copies W*H floats, so a warp-per-row version with
// ballot scans is the obvious step if it ever shows in a profile).
#include "backend.hpp"
#include "fill_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

__global__ void fill_background_kernel(float* d, std::ptrdiff_t pitch, int width, int height) {
  const int y = blockIdx.x * blockDim.x + threadIdx.x;
  if (y >= height) return;
  fill_occlusions_row(d + y * pitch, width);
}

}  // namespace

void fill_background(float* d_disparity, std::ptrdiff_t pitch, int width, int height, StreamHandle stream) {
  constexpr int kBlock = 64;
  fill_background_kernel<<<grid_size(height, kBlock), kBlock, 0, stream>>>(d_disparity, pitch, width, height);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
