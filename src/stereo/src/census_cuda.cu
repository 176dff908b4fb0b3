// Census transform, CUDA backend: one thread per pixel, the same census_at() as the CPU, on a shared-memory tile.
#include "backend.hpp"
#include "census_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

// The block's pixels plus the window's halo are staged in shared memory first, with the image coordinates
// clamped as census_at() clamps them; the code is then computed on that tile, where every read falls inside
// (so census_at()'s own clamping is the identity there): the same bits, one global read per tile pixel.
// The common windows (9x7 full / centre-symmetric) have a fully unrolled copy of census_at()'s loops (same
// raster order, same comparisons): the generic loop with run-time bounds and clamps costs ~20 instructions
// per bit.
template <typename T>
__device__ S3D_FORCEINLINE void stage_tile(ImageView<const T> image, int rx, int ry, T* tile, int tw, int th) {
  const int x0 = static_cast<int>(blockIdx.x * blockDim.x) - rx, y0 = static_cast<int>(blockIdx.y * blockDim.y) - ry;
  for (int k = threadIdx.y * blockDim.x + threadIdx.x; k < tw * th; k += blockDim.x * blockDim.y) {
    const int ty = k / tw, tx = k - ty * tw;
    tile[k] = image(clamp_int(x0 + tx, 0, image.width - 1), clamp_int(y0 + ty, 0, image.height - 1));
  }
}

template <typename T>
__global__ void census_kernel(ImageView<const T> image, bool center_symmetric, int ww, int wh, std::uint64_t* out) {
  extern __shared__ unsigned char tile_bytes[];
  T* tile = reinterpret_cast<T*>(tile_bytes);
  const int rx = ww / 2, ry = wh / 2;
  const int tw = static_cast<int>(blockDim.x) + 2 * rx, th = static_cast<int>(blockDim.y) + 2 * ry;
  stage_tile(image, rx, ry, tile, tw, th);
  __syncthreads();
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image.width || y >= image.height) return;
  const ImageView<const T> view{tile, tw, th, tw};
  out[static_cast<std::ptrdiff_t>(y) * image.width + x] =
      census_at(view, static_cast<int>(threadIdx.x) + rx, static_cast<int>(threadIdx.y) + ry, center_symmetric, ww, wh);
}

/// census_at() for a WW x WH window, unrolled (block 32 x 8, static tile); blockIdx.z picks the image of a
/// pair (one launch for both).
template <typename T, int WW, int WH, bool kCenterSymmetric>
__global__ void __launch_bounds__(256) census_fixed_kernel(ImageView<const T> image0, ImageView<const T> image1,
                                                           std::uint64_t* out0, std::uint64_t* out1) {
  const ImageView<const T> image = blockIdx.z == 0 ? image0 : image1;
  std::uint64_t* out = blockIdx.z == 0 ? out0 : out1;
  constexpr int kRx = WW / 2, kRy = WH / 2, kTw = 32 + 2 * kRx, kTh = 8 + 2 * kRy;
  __shared__ T tile[kTh * kTw];
  stage_tile(image, kRx, kRy, tile, kTw, kTh);
  __syncthreads();
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= image.width || y >= image.height) return;
  const T* at = tile + (threadIdx.y + kRy) * kTw + threadIdx.x + kRx;  // the centre
  std::uint64_t code = 0;
  if constexpr (!kCenterSymmetric) {
    const T c = at[0];
#pragma unroll
    for (int dy = -kRy; dy <= kRy; ++dy)
#pragma unroll
      for (int dx = -kRx; dx <= kRx; ++dx) {
        if (dx == 0 && dy == 0) continue;
        code = (code << 1) | static_cast<std::uint64_t>(at[dy * kTw + dx] < c);
      }
  } else {
    constexpr int kN = WW * WH;
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) {
      const int dy = i / WW - kRy, dx = i % WW - kRx;
      code = (code << 1) | static_cast<std::uint64_t>(at[dy * kTw + dx] < at[-dy * kTw - dx]);
    }
  }
  out[static_cast<std::ptrdiff_t>(y) * image.width + x] = code;
}

template <typename T>
void launch_census(ImageView<const T> d_left, ImageView<const T> d_right, CensusSpec spec, std::uint64_t* d_out_left,
                   std::uint64_t* d_out_right, int images, StreamHandle stream) {
  const dim3 block(32, 8);
  if (spec.width == 9 && spec.height == 7) {
    const dim3 grid(grid_size(d_left.width, block.x), grid_size(d_left.height, block.y), images);
    if (spec.kind == CensusKind::kCenterSymmetric) {
      census_fixed_kernel<T, 9, 7, true><<<grid, block, 0, stream>>>(d_left, d_right, d_out_left, d_out_right);
    } else {
      census_fixed_kernel<T, 9, 7, false><<<grid, block, 0, stream>>>(d_left, d_right, d_out_left, d_out_right);
    }
    S3D_CUDA_CHECK_LAUNCH();
    return;
  }
  const dim3 grid(grid_size(d_left.width, block.x), grid_size(d_left.height, block.y));
  const std::size_t smem =
      static_cast<std::size_t>(block.x + 2 * (spec.width / 2)) * (block.y + 2 * (spec.height / 2)) * sizeof(T);
  const bool cs = spec.kind == CensusKind::kCenterSymmetric;
  census_kernel<T><<<grid, block, smem, stream>>>(d_left, cs, spec.width, spec.height, d_out_left);
  S3D_CUDA_CHECK_LAUNCH();
  if (images == 2) {
    census_kernel<T><<<grid, block, smem, stream>>>(d_right, cs, spec.width, spec.height, d_out_right);
    S3D_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

template <typename T>
void census(ImageView<const T> d_image, CensusSpec spec, std::uint64_t* d_out, StreamHandle stream) {
  launch_census(d_image, d_image, spec, d_out, d_out, 1, stream);
}

template <typename T>
void census_pair(ImageView<const T> d_left, ImageView<const T> d_right, CensusSpec spec, std::uint64_t* d_out_left,
                 std::uint64_t* d_out_right, StreamHandle stream) {
  launch_census(d_left, d_right, spec, d_out_left, d_out_right, 2, stream);
}

template void census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec, std::uint64_t*, StreamHandle);
template void census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec, std::uint64_t*, StreamHandle);
template void census_pair<std::uint8_t>(ImageView<const std::uint8_t>, ImageView<const std::uint8_t>, CensusSpec,
                                        std::uint64_t*, std::uint64_t*, StreamHandle);
template void census_pair<std::uint16_t>(ImageView<const std::uint16_t>, ImageView<const std::uint16_t>, CensusSpec,
                                         std::uint64_t*, std::uint64_t*, StreamHandle);

}  // namespace s3d::stereo::detail::cuda
