// Census transform, CUDA backend: one thread per pixel, the same census_at() as the CPU.
#include "backend.hpp"
#include "census_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

template <typename T>
__global__ void census_kernel(ImageView<const T> image, bool center_symmetric, int ww, int wh, std::uint64_t* out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image.width || y >= image.height) return;
  out[static_cast<std::ptrdiff_t>(y) * image.width + x] = census_at(image, x, y, center_symmetric, ww, wh);
}

}  // namespace

template <typename T>
void census(ImageView<const T> d_image, CensusSpec spec, std::uint64_t* d_out, StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(d_image.width, block.x), grid_size(d_image.height, block.y));
  census_kernel<T><<<grid, block, 0, stream>>>(d_image, spec.kind == CensusKind::kCenterSymmetric, spec.width,
                                                spec.height, d_out);
  S3D_CUDA_CHECK_LAUNCH();
}

template void census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec, std::uint64_t*, StreamHandle);
template void census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec, std::uint64_t*, StreamHandle);

}  // namespace s3d::stereo::detail::cuda
