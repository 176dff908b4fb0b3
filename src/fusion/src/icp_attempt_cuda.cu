// Tracking, CUDA: a whole ICP attempt (every level and iteration) in one cooperative launch. Per iteration
// the blocks reduce their tiles (the tree of tracking_math.hpp), meet in one grid-wide barrier, and then
// every block sums all tile sums in the same double tree and applies the same icp_step to its own
// shared-memory copy of the state: identical inputs give identical states, so no second barrier is needed
// to hand the new pose around. Launches and host round trips per iteration are what this removes.
#include <cooperative_groups.h>

#include <algorithm>

#include "icp_reduce_device.cuh"
#include "s3d/core/cuda_check.cuh"
#include "tracking_cuda.cuh"

namespace s3d::fusion::detail {
namespace {

namespace cg = cooperative_groups;

__global__ void __launch_bounds__(kReduceThreads, 2)
    icp_attempt_kernel(IcpAttempt attempt, float* __restrict__ tile_sums, IcpState* __restrict__ state) {
  __shared__ float groups_f[kIcpTerms][kReduceWarps];
  __shared__ double groups_d[kIcpTerms][kReduceWarps];
  __shared__ double totals[kIcpTerms];
  __shared__ IcpState st;
  __shared__ Rigid estimate;
  cg::grid_group grid = cg::this_grid();
  load_state_device(state, &st);
  __syncthreads();
  int parity = 0;
  for (int level = attempt.levels - 1; level >= 0; --level) {
    const IcpAttemptLevel& lv = attempt.level[level];
    for (int it = 0; it < lv.iterations; ++it) {
      if (!icp_runs_level(st, level)) break;  // every block holds the same state: the grid leaves together
      if (threadIdx.x == 0) estimate = to_rigid(st.pose);
      __syncthreads();
      IcpInputs in = lv.in;
      in.estimate = estimate;
      // Two buffers: a block writes iteration i + 2's sums only after the barrier of iteration i + 1, which
      // every block reaches after reading iteration i's.
      float* sums = tile_sums + parity * kIcpTerms * attempt.max_tiles;
      for (int tile = blockIdx.x; tile < lv.tiles; tile += gridDim.x) {
        float acc[kIcpTerms];
        icp_thread_sum(in, tile, threadIdx.x, acc);
        const float t = block_tree_device(acc, groups_f);
        if (threadIdx.x < kIcpTerms) sums[threadIdx.x * lv.tiles + tile] = t;
        __syncthreads();  // groups_f is rewritten by the next tile
      }
      grid.sync();
      const double total = tile_total_device(sums, lv.tiles, groups_d);
      if (threadIdx.x < kIcpTerms) totals[threadIdx.x] = total;
      __syncthreads();
      if (threadIdx.x == 0) icp_step(st, totals, level, attempt.max_condition);
      __syncthreads();
      parity ^= 1;
    }
  }
  if (blockIdx.x == 0) store_state_device(&st, state);
}

}  // namespace

int icp_attempt_blocks(int device) {
  int per_sm = 0, sms = 0, cooperative = 0;
  S3D_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  if (!cooperative) return 0;
  S3D_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  S3D_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, icp_attempt_kernel, kReduceThreads, 0));
  return per_sm * sms;
}

void icp_attempt_cuda(const IcpAttempt& attempt, int blocks, float* d_tile_sums, IcpState* d_state,
                      cudaStream_t stream) {
  IcpAttempt args = attempt;
  void* params[] = {&args, &d_tile_sums, &d_state};
  S3D_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&icp_attempt_kernel), dim3(blocks),
                                             dim3(kReduceThreads), params, 0, stream));
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::fusion::detail
