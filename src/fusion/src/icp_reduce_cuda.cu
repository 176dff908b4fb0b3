// Tracking, CUDA: the ICP reduction in one launch (FUSION.md §3: per-thread sums in registers, warp
// shuffles, one shared-memory step), with the fixed tree of tracking_math.hpp so that the result equals
// icp_reduce_cpu bit for bit. Block b reduces tile b; the last block to finish sums the tiles in double.
#include "s3d/core/cuda_check.cuh"
#include "tracking_cuda.cuh"

namespace s3d::fusion::detail {
namespace {

constexpr int kWarps = kReduceThreads / 32;

/// __shfl_down with offsets 16..1: lane 0 gets warp_tree() of the 32 lanes' values.
template <typename T>
__device__ __forceinline__ T warp_tree_device(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = v + __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

/// The block tree of the kIcpTerms values each thread holds; thread k < kIcpTerms gets term k's sum.
template <typename T>
__device__ __forceinline__ T block_tree_device(T (&acc)[kIcpTerms], T (*groups)[kWarps]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < kIcpTerms; ++k) {
    const T s = warp_tree_device(acc[k]);
    if (lane == 0) groups[k][warp] = s;
  }
  __syncthreads();
  return threadIdx.x < kIcpTerms ? tree8(groups[threadIdx.x]) : T(0);
}

__global__ void __launch_bounds__(kReduceThreads, 2)
    icp_reduce_kernel(IcpInputs in, int tiles, float* __restrict__ tile_sums, unsigned int* __restrict__ counter,
                      double* __restrict__ out) {
  __shared__ float groups_f[kIcpTerms][kWarps];
  __shared__ double groups_d[kIcpTerms][kWarps];
  __shared__ bool last;
  float acc[kIcpTerms];
  icp_thread_sum(in, blockIdx.x, threadIdx.x, acc);
  const float tile = block_tree_device(acc, groups_f);
  if (threadIdx.x < kIcpTerms) {
    tile_sums[threadIdx.x * tiles + blockIdx.x] = tile;
    __threadfence();  // the tile sum is visible device-wide before this block takes its ticket
  }
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == static_cast<unsigned>(tiles - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Tiles in ascending order per thread, the kIcpTerms loads of a tile issued together (L2 latency once).
  double part[kIcpTerms];
#pragma unroll
  for (int k = 0; k < kIcpTerms; ++k) part[k] = 0.0;
  for (int t = threadIdx.x; t < tiles; t += kReduceThreads) {
    float v[kIcpTerms];
#pragma unroll
    for (int k = 0; k < kIcpTerms; ++k) v[k] = __ldcg(tile_sums + k * tiles + t);
#pragma unroll
    for (int k = 0; k < kIcpTerms; ++k) part[k] += static_cast<double>(v[k]);
  }
  const double total = block_tree_device(part, groups_d);
  if (threadIdx.x < kIcpTerms) out[threadIdx.x] = total;
  if (threadIdx.x == 0) *counter = 0u;  // ready for the next launch (stream-ordered)
}

}  // namespace

void icp_reduce_cuda(const IcpInputs& in, float* d_tile_sums, unsigned int* d_counter, double* host_out,
                     cudaStream_t stream) {
  const int tiles = icp_tiles(in.cur_pixels);
  if (tiles == 0) {
    for (int k = 0; k < kIcpTerms; ++k) host_out[k] = 0.0;  // nothing of this stream writes it now
    return;
  }
  icp_reduce_kernel<<<tiles, kReduceThreads, 0, stream>>>(in, tiles, d_tile_sums, d_counter, host_out);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::fusion::detail
