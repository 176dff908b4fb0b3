// Census transform, CUDA backend: one thread per pixel, the same census_at() as the CPU, on a shared-memory tile.
#include "backend.hpp"
#include "census_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

// The block's pixels plus the window's halo are staged in shared memory first, with the image coordinates
// clamped as census_at() clamps them; census_at() then runs on that tile (all its reads fall inside it, so
// its own clamping is the identity there): the same bits, one global read per tile pixel.
template <typename T>
__global__ void census_kernel(ImageView<const T> image, bool center_symmetric, int ww, int wh, std::uint64_t* out) {
  extern __shared__ unsigned char tile_bytes[];
  T* tile = reinterpret_cast<T*>(tile_bytes);
  const int rx = ww / 2, ry = wh / 2;
  const int tw = static_cast<int>(blockDim.x) + 2 * rx, th = static_cast<int>(blockDim.y) + 2 * ry;
  const int x0 = static_cast<int>(blockIdx.x * blockDim.x) - rx, y0 = static_cast<int>(blockIdx.y * blockDim.y) - ry;
  for (int k = threadIdx.y * blockDim.x + threadIdx.x; k < tw * th; k += blockDim.x * blockDim.y) {
    const int ty = k / tw, tx = k - ty * tw;
    tile[k] = image(clamp_int(x0 + tx, 0, image.width - 1), clamp_int(y0 + ty, 0, image.height - 1));
  }
  __syncthreads();
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image.width || y >= image.height) return;
  const ImageView<const T> view{tile, tw, th, tw};
  out[static_cast<std::ptrdiff_t>(y) * image.width + x] =
      census_at(view, static_cast<int>(threadIdx.x) + rx, static_cast<int>(threadIdx.y) + ry, center_symmetric, ww, wh);
}

}  // namespace

template <typename T>
void census(ImageView<const T> d_image, CensusSpec spec, std::uint64_t* d_out, StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(d_image.width, block.x), grid_size(d_image.height, block.y));
  const std::size_t smem = static_cast<std::size_t>(block.x + 2 * (spec.width / 2)) * (block.y + 2 * (spec.height / 2)) * sizeof(T);
  census_kernel<T><<<grid, block, smem, stream>>>(d_image, spec.kind == CensusKind::kCenterSymmetric, spec.width,
                                                   spec.height, d_out);
  S3D_CUDA_CHECK_LAUNCH();
}

template void census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec, std::uint64_t*, StreamHandle);
template void census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec, std::uint64_t*, StreamHandle);

}  // namespace s3d::stereo::detail::cuda
