// CloudSummary on the GPU (voxels_summary_cuda.cuh): a grid-stride pass, each block reducing its points'
// bounds, first bad indices and largest batch id, then one atomic per block and value. Coordinates are reduced
// as ints whose order is the floats' (only finite values take part), so atomicMin / atomicMax give the least
// and greatest. That order puts -0 below +0 (the host's comparisons keep whichever comes first); no grid tells
// them apart: floor and the min-bound offset give the same cells.
#include <algorithm>
#include <climits>
#include <cmath>

#include "ordered_float.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/stream.hpp"
#include "voxels_summary_cuda.cuh"

namespace s3d::points::detail {
namespace {

constexpr int kThreads = 256;
constexpr long long kMaxBlocks = 264;  // two an SM of an H100 / H200; each thread takes several points
constexpr unsigned long long kNone = ~0ULL;

__global__ void reset_kernel(SummaryWords* w) {
  for (int a = 0; a < 3; ++a) {
    w->lo[a] = INT_MAX;
    w->hi[a] = INT_MIN;
  }
  w->max_batch = 0;
  w->first_non_finite = w->first_negative_batch = kNone;
}

__global__ void __launch_bounds__(kThreads)
    summary_kernel(const float* __restrict__ xyz, const std::int32_t* __restrict__ batch, long long n,
                   SummaryWords* w) {
  int lo[3] = {INT_MAX, INT_MAX, INT_MAX}, hi[3] = {INT_MIN, INT_MIN, INT_MIN}, top = 0;
  unsigned long long bad = kNone, negative = kNone;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    bool finite = true;
    for (int a = 0; a < 3; ++a) {
      const float v = xyz[3 * i + a];
      if (!isfinite(v)) {
        finite = false;
        continue;
      }
      const int o = ordered_float(v);
      lo[a] = min(lo[a], o);
      hi[a] = max(hi[a], o);
    }
    if (!finite) bad = min(bad, static_cast<unsigned long long>(i));
    if (batch) {
      const int b = batch[i];
      if (b < 0) negative = min(negative, static_cast<unsigned long long>(i));
      top = max(top, b);
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    for (int a = 0; a < 3; ++a) {
      lo[a] = min(lo[a], __shfl_xor_sync(0xffffffffu, lo[a], o));
      hi[a] = max(hi[a], __shfl_xor_sync(0xffffffffu, hi[a], o));
    }
    bad = min(bad, __shfl_xor_sync(0xffffffffu, bad, o));
    negative = min(negative, __shfl_xor_sync(0xffffffffu, negative, o));
    top = max(top, __shfl_xor_sync(0xffffffffu, top, o));
  }
  // The block's warps meet in shared memory, so that one thread a block does the atomics (every block's on the
  // same nine words: fewer of them, less serialisation at the L2).
  __shared__ SummaryWords warp_words[kThreads / 32];
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    for (int a = 0; a < 3; ++a) {
      warp_words[warp].lo[a] = lo[a];
      warp_words[warp].hi[a] = hi[a];
    }
    warp_words[warp].max_batch = top;
    warp_words[warp].first_non_finite = bad;
    warp_words[warp].first_negative_batch = negative;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int k = 1; k < kThreads / 32; ++k) {
    const SummaryWords& o = warp_words[k];
    for (int a = 0; a < 3; ++a) {
      lo[a] = min(lo[a], o.lo[a]);
      hi[a] = max(hi[a], o.hi[a]);
    }
    top = max(top, o.max_batch);
    bad = min(bad, o.first_non_finite);
    negative = min(negative, o.first_negative_batch);
  }
  for (int a = 0; a < 3; ++a) {
    if (lo[a] != INT_MAX) atomicMin(&w->lo[a], lo[a]);
    if (hi[a] != INT_MIN) atomicMax(&w->hi[a], hi[a]);
  }
  if (top > 0) atomicMax(&w->max_batch, top);
  if (bad != kNone) atomicMin(&w->first_non_finite, bad);
  if (negative != kNone) atomicMin(&w->first_negative_batch, negative);
}

}  // namespace

CloudSummary CloudSummarizer::run(const float* xyz, const std::int32_t* batch, long long n, StreamHandle stream) {
  words_.resize(1, stream);
  host_.resize(1);
  reset_kernel<<<1, 1, 0, stream>>>(words_.data());
  S3D_CUDA_CHECK_LAUNCH();
  const long long blocks = std::min(kMaxBlocks, (n + kThreads - 1) / kThreads);
  summary_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(xyz, batch, n, words_.data());
  S3D_CUDA_CHECK_LAUNCH();
  words_.copy_to_host_async(host_.data(), 1, stream);
  synchronize(stream);
  const SummaryWords& h = host_.data()[0];
  CloudSummary s{};
  for (int a = 0; a < 3; ++a) {
    s.lo[a] = h.lo[a] == INT_MAX ? INFINITY : from_ordered_float(h.lo[a]);
    s.hi[a] = h.hi[a] == INT_MIN ? -INFINITY : from_ordered_float(h.hi[a]);
  }
  s.max_batch = h.max_batch;
  s.first_non_finite = h.first_non_finite == kNone ? -1 : static_cast<long long>(h.first_non_finite);
  s.first_negative_batch = h.first_negative_batch == kNone ? -1 : static_cast<long long>(h.first_negative_batch);
  return s;
}

}  // namespace s3d::points::detail
