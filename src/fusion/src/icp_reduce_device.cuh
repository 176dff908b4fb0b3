#pragma once
// Internal, device side: the block part of the ICP reduction tree (tracking_math.hpp) — warp shuffles, then
// the tree over the 8 warp sums — shared by the per-iteration kernel and the whole-attempt kernel.
#include "icp_step_math.hpp"
#include "tracking_math.hpp"

namespace s3d::fusion::detail {

constexpr int kReduceWarps = kReduceThreads / 32;

/// __shfl_down with offsets 16..1: lane 0 gets warp_tree() of the 32 lanes' values.
template <typename T>
__device__ __forceinline__ T warp_tree_device(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = v + __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

/// The block tree of the kIcpTerms values each thread holds; thread k < kIcpTerms gets term k's sum. Reads
/// `groups` after a barrier: a second call on the same `groups` needs a barrier in between.
template <typename T>
__device__ __forceinline__ T block_tree_device(T (&acc)[kIcpTerms], T (*groups)[kReduceWarps]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < kIcpTerms; ++k) {
    const T s = warp_tree_device(acc[k]);
    if (lane == 0) groups[k][warp] = s;
  }
  __syncthreads();
  return threadIdx.x < kIcpTerms ? tree8(groups[threadIdx.x]) : T(0);
}

/// The double tree over `tiles` tile sums (term k of tile t at sums[k * tiles + t]), read past L1 (other
/// blocks wrote them): thread k < kIcpTerms gets term k's total. Not inlined: inlined into a kernel that also
/// runs icp_step, its loads were scheduled one after another (H100: 16.7 us instead of 2.7 at 300 tiles).
static __device__ __noinline__ double tile_total_device(const float* sums, int tiles, double (*groups)[kReduceWarps]) {
  // Tiles in ascending order per thread, the kIcpTerms loads of a tile issued together (L2 latency once).
  double part[kIcpTerms];
#pragma unroll
  for (int k = 0; k < kIcpTerms; ++k) part[k] = 0.0;
  for (int t = threadIdx.x; t < tiles; t += kReduceThreads) {
    float v[kIcpTerms];
#pragma unroll
    for (int k = 0; k < kIcpTerms; ++k) v[k] = __ldcg(sums + k * tiles + t);
#pragma unroll
    for (int k = 0; k < kIcpTerms; ++k) part[k] += static_cast<double>(v[k]);
  }
  return block_tree_device(part, groups);
}

/// An ICP state between global memory and a block's shared-memory copy, one 8-byte word per thread (the
/// block's first threads); global reads go past L1 (another launch or block wrote the state). icp_step runs on
/// one thread, on the shared copy: its many dependent reads and writes would otherwise be global round trips.
constexpr int kStateWords = sizeof(IcpState) / 8;
static_assert(sizeof(IcpState) % 8 == 0 && kStateWords <= kReduceThreads, "one word per thread");

__device__ __forceinline__ void load_state_device(const IcpState* global, IcpState* shared) {
  if (threadIdx.x < kStateWords)
    reinterpret_cast<unsigned long long*>(shared)[threadIdx.x] =
        __ldcg(reinterpret_cast<const unsigned long long*>(global) + threadIdx.x);
}

__device__ __forceinline__ void store_state_device(const IcpState* shared, IcpState* global) {
  if (threadIdx.x < kStateWords)
    reinterpret_cast<unsigned long long*>(global)[threadIdx.x] =
        reinterpret_cast<const unsigned long long*>(shared)[threadIdx.x];
}

}  // namespace s3d::fusion::detail
