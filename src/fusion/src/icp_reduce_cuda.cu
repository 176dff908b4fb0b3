// Tracking, CUDA: the ICP reduction in one launch (per-thread sums in registers, warp shuffles, one
// shared-memory step), with the fixed tree of tracking_math.hpp so that the result equals
// icp_reduce_cpu bit for bit. Block b reduces tile b; the last block to finish sums the tiles in double (and,
// in an attempt on the device, solves and updates the pose).
#include <algorithm>

#include "icp_reduce_device.cuh"
#include "s3d/core/cuda_check.cuh"
#include "tracking_cuda.cuh"

namespace s3d::fusion::detail {
namespace {

/// kStep false: the system of `in` into `out` (kIcpTerms doubles). kStep true: one iteration of an attempt
/// whose state lives in `state` — nothing to do once it stopped or gave up `level`; the estimate comes from the
/// state, and the last block applies icp_step, so consecutive launches chain without the host.
template <bool kStep>
__global__ void __launch_bounds__(kReduceThreads, 2)
    icp_reduce_kernel(IcpInputs in, int tiles, float* __restrict__ tile_sums, unsigned int* __restrict__ counter,
                      double* __restrict__ out, IcpState* __restrict__ state, int level, double max_condition) {
  __shared__ float groups_f[kIcpTerms][kReduceWarps];
  __shared__ double groups_d[kIcpTerms][kReduceWarps];
  __shared__ double totals[kIcpTerms];
  __shared__ Rigid estimate;
  __shared__ bool last;
  if constexpr (kStep) {
    if (!icp_runs_level(*state, level)) return;  // the whole grid reads the same state
    if (threadIdx.x == 0) estimate = to_rigid(state->pose);
    __syncthreads();
    in.estimate = estimate;
  }
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
  const double total = tile_total_device(tile_sums, tiles, groups_d);
  if (threadIdx.x == 0) *counter = 0u;  // ready for the next launch (stream-ordered)
  if constexpr (kStep) {
    __shared__ IcpState step_state;
    if (threadIdx.x < kIcpTerms) totals[threadIdx.x] = total;
    load_state_device(state, &step_state);
    __syncthreads();
    if (threadIdx.x == 0) icp_step(step_state, totals, level, max_condition);
    __syncthreads();
    store_state_device(&step_state, state);
  } else {
    if (threadIdx.x < kIcpTerms) out[threadIdx.x] = total;
  }
}

}  // namespace

void icp_reduce_cuda(const IcpInputs& in, float* d_tile_sums, unsigned int* d_counter, double* host_out,
                     cudaStream_t stream) {
  const int tiles = icp_tiles(in.cur_pixels);
  if (tiles == 0) {
    for (int k = 0; k < kIcpTerms; ++k) host_out[k] = 0.0;  // nothing of this stream writes it now
    return;
  }
  icp_reduce_kernel<false>
      <<<tiles, kReduceThreads, 0, stream>>>(in, tiles, d_tile_sums, d_counter, host_out, nullptr, 0, 0.0);
  S3D_CUDA_CHECK_LAUNCH();
}

void icp_iteration_cuda(const IcpInputs& in, float* d_tile_sums, unsigned int* d_counter, IcpState* d_state, int level,
                        double max_condition, cudaStream_t stream) {
  // An empty level still counts as an iteration with an empty system: one block that reduces nothing.
  const int tiles = std::max(icp_tiles(in.cur_pixels), 1);
  icp_reduce_kernel<true>
      <<<tiles, kReduceThreads, 0, stream>>>(in, tiles, d_tile_sums, d_counter, nullptr, d_state, level, max_condition);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::fusion::detail
