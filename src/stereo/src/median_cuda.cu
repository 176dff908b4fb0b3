// 3x3 median over valid pixels, CUDA backend (median3x3_at shared with the CPU).
#include "backend.hpp"
#include "median_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

// Same value as median3x3_at() (the stable insertion sort's element n/2 over the valid neighbours), found
// by rank instead of sorting: element i lands at position #{valid j: v_j < v_i} + #{valid j < i: v_j == v_i}
// in that sort. Fully unrolled over the 9 neighbours, so everything stays in registers (the sort's indexed
// array went to local memory).
__global__ void median3x3_kernel(const float* in, std::ptrdiff_t ip, float* out, std::ptrdiff_t op, int W, int H) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const float c = in[y * ip + x];
  if (!finite_disparity(c)) {
    out[y * op + x] = c;
    return;
  }
  float v[9];
  bool ok[9];
  int n = 0;
#pragma unroll
  for (int k = 0; k < 9; ++k) {
    const int xx = x + k % 3 - 1, yy = y + k / 3 - 1;
    const bool inside = xx >= 0 && xx < W && yy >= 0 && yy < H;
    v[k] = inside ? in[yy * ip + xx] : 0.0f;
    ok[k] = inside && finite_disparity(v[k]);
    n += ok[k] ? 1 : 0;
  }
  const int target = n / 2;
  float result = c;
#pragma unroll
  for (int i = 0; i < 9; ++i) {
    int rank = 0;
#pragma unroll
    for (int j = 0; j < 9; ++j)
      if (j != i) rank += (ok[j] && (v[j] < v[i] || (j < i && v[j] == v[i]))) ? 1 : 0;
    if (ok[i] && rank == target) result = v[i];
  }
  out[y * op + x] = result;
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
