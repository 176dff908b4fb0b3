// Speckle filter, CUDA backend. The same 4-connected components as the CPU flood fill, found with
// lock-free union-find (Playne & Hawick, IEEE TPDS 2018): init (labels = run starts inside each warp's
// 32-pixel row segment, by ballot), merge along the remaining left/up edges with atomicMin unions (redundant
// up edges skipped), flatten + count (warp-aggregated atomics), then invalidate regions of <= max_size pixels.
// Components are a property of the graph, not of the traversal order, so the result equals the CPU's exactly.
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

/// Labels: -1 for invalid pixels, else the start of the pixel's run of horizontally connected pixels inside
/// its 32-pixel warp segment (one ballot), so only the segments' first pixels unite leftwards. Zeroes sizes.
__global__ void init_kernel(const float* disp, std::ptrdiff_t pitch, int W, int H, float max_diff, int* label,
                            int* size) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;  // blockDim.x == 32: one warp = one row segment
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int lane = threadIdx.x;
  const bool inside = x < W && y < H;
  const float d = inside ? disp[y * pitch + x] : kInvalidDisparity;
  const bool valid = inside && finite_disparity(d);
  const bool left = valid && lane > 0 && connected(d, disp[y * pitch + x - 1], max_diff);
  const unsigned bits = __ballot_sync(0xffffffffu, left);
  if (!inside) return;
  const unsigned below = ~bits & (lane == 31 ? 0xffffffffu : ((2u << lane) - 1u));  // bit 0 is always set
  const int start = 31 - __clz(static_cast<int>(below));
  const int i = y * W + x;
  label[i] = valid ? i - (lane - start) : -1;
  size[i] = 0;
}

/// Unions along the remaining edges: left edges at segment starts, up edges unless the pixel is already
/// joined to its upper neighbour through left, upper-left and up (Playne & Hawick's redundant-edge rule).
__global__ void merge_kernel(const float* disp, std::ptrdiff_t pitch, int W, int H, float max_diff, int* label) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const float d = disp[y * pitch + x];
  if (!finite_disparity(d)) return;
  const int i = y * W + x;
  const bool left = x > 0 && connected(d, disp[y * pitch + x - 1], max_diff);
  if (left && (x & 31) == 0) unite(label, i, i - 1);
  if (y > 0) {
    const float up = disp[(y - 1) * pitch + x];
    if (connected(d, up, max_diff)) {
      const bool skip = left && connected(disp[y * pitch + x - 1], disp[(y - 1) * pitch + x - 1], max_diff) &&
                        connected(disp[(y - 1) * pitch + x - 1], up, max_diff);
      if (!skip) unite(label, i, i - W);
    }
  }
}

/// Flattens each label to its root and counts the component sizes (one atomic per root per warp).
__global__ void count_kernel(int W, int H, int* label, int* size) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int i = y * W + x;
  const bool inside = x < W && y < H;
  const int l = inside ? label[i] : -1;
  const int r = l >= 0 ? find_root(label, l) : -1;
  if (l >= 0) label[i] = r;
  const unsigned same = __match_any_sync(0xffffffffu, r);
  if (r >= 0 && (threadIdx.x & 31) == __ffs(same) - 1) atomicAdd(&size[r], __popc(same));
}

__global__ void filter_kernel(float* disp, std::ptrdiff_t pitch, int W, int H, int max_size, const int* label,
                              const int* size) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= W || y >= H) return;
  const int l = label[y * W + x];
  if (l >= 0 && size[l] <= max_size) disp[y * pitch + x] = kInvalidDisparity;
}

}  // namespace

void speckle(float* d_disparity, std::ptrdiff_t pitch, int width, int height, int max_size, float max_diff,
             int* d_scratch, StreamHandle stream) {
  const dim3 block(32, 8);
  const dim3 grid(grid_size(width, block.x), grid_size(height, block.y));
  int* label = d_scratch;
  int* size = d_scratch + static_cast<std::ptrdiff_t>(width) * height;
  init_kernel<<<grid, block, 0, stream>>>(d_disparity, pitch, width, height, max_diff, label, size);
  S3D_CUDA_CHECK_LAUNCH();
  merge_kernel<<<grid, block, 0, stream>>>(d_disparity, pitch, width, height, max_diff, label);
  S3D_CUDA_CHECK_LAUNCH();
  count_kernel<<<grid, block, 0, stream>>>(width, height, label, size);
  S3D_CUDA_CHECK_LAUNCH();
  filter_kernel<<<grid, block, 0, stream>>>(d_disparity, pitch, width, height, max_size, label, size);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
