// Speckle filter, CUDA backend. The same 4-connected components as the CPU flood fill, found with
// lock-free union-find (Playne & Hawick, IEEE TPDS 2018): init, merge along left/up edges with atomicMin
// unions, flatten + count with atomicAdd, then invalidate regions of <= max_size pixels. Components are a
// property of the graph, not of the traversal order, so the result equals the CPU's exactly.
#include "backend.hpp"
#include "median_math.hpp"
#include "s3d/core/cuda_check.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

__device__ int find_root(const int* label, int i) {
  const volatile int* l = label;
  int p = l[i];
  while (p != i) {
    i = p;
    p = l[i];
  }
  return i;
}

__device__ void unite(int* label, int a, int b) {
  bool done = false;
  while (!done) {
    a = find_root(label, a);
    b = find_root(label, b);
    if (a < b) {
      const int old = atomicMin(&label[b], a);
      done = old == b;
      b = old;
    } else if (b < a) {
      const int old = atomicMin(&label[a], b);
      done = old == a;
      a = old;
    } else {
      done = true;
    }
  }
}

__device__ S3D_FORCEINLINE bool connected(float a, float b, float max_diff) {
  return finite_disparity(b) && (a > b ? a - b : b - a) <= max_diff;
}

__global__ void init_kernel(const float* disp, std::ptrdiff_t pitch, int W, int H, int* label, int* size) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int i = y * W + x;
  label[i] = finite_disparity(disp[y * pitch + x]) ? i : -1;
  size[i] = 0;
}

__global__ void merge_kernel(const float* disp, std::ptrdiff_t pitch, int W, int H, float max_diff, int* label) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const float d = disp[y * pitch + x];
  if (!finite_disparity(d)) return;
  const int i = y * W + x;
  if (x > 0 && connected(d, disp[y * pitch + x - 1], max_diff)) unite(label, i, i - 1);
  if (y > 0 && connected(d, disp[(y - 1) * pitch + x], max_diff)) unite(label, i, i - W);
}

__global__ void count_kernel(int W, int H, int* label, int* size) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int i = y * W + x;
  if (label[i] < 0) return;
  const int r = find_root(label, i);
  atomicAdd(&size[r], 1);
}

__global__ void filter_kernel(float* disp, std::ptrdiff_t pitch, int W, int H, int max_size, const int* label,
                              const int* size) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int i = y * W + x;
  if (label[i] < 0) return;
  if (size[find_root(label, i)] <= max_size) disp[y * pitch + x] = kInvalidDisparity;
}

}  // namespace

void speckle(float* d_disparity, std::ptrdiff_t pitch, int width, int height, int max_size, float max_diff,
             int* d_scratch, StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(width, block.x), grid_size(height, block.y));
  int* label = d_scratch;
  int* size = d_scratch + static_cast<std::ptrdiff_t>(width) * height;
  init_kernel<<<grid, block, 0, stream>>>(d_disparity, pitch, width, height, label, size);
  S3D_CUDA_CHECK_LAUNCH();
  merge_kernel<<<grid, block, 0, stream>>>(d_disparity, pitch, width, height, max_diff, label);
  S3D_CUDA_CHECK_LAUNCH();
  count_kernel<<<grid, block, 0, stream>>>(width, height, label, size);
  S3D_CUDA_CHECK_LAUNCH();
  filter_kernel<<<grid, block, 0, stream>>>(d_disparity, pitch, width, height, max_size, label, size);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
