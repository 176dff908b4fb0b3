// Tracking, CPU: the ICP reduction, reproducing the CUDA kernel's tree step by step (tracking_math.hpp):
// per-thread float sums, the warp trees, the 8-group tree, then the tiles in double with the same trees.
#include <vector>

#include "tracking_common.hpp"
#include "tracking_cpu.hpp"

namespace s3d::fusion::detail {
namespace {

/// The block tree over 256 per-thread values (modified in place), as the kernel leaves it in thread 0.
template <typename T>
T block_tree(T* v) {
  T groups[kReduceThreads / 32];
  for (int g = 0; g < kReduceThreads / 32; ++g) groups[g] = warp_tree(v + 32 * g);
  return tree8(groups);
}

}  // namespace

void icp_reduce_cpu(const IcpInputs& in, double* out) {
  const int tiles = icp_tiles(in.cur_pixels);
  // Tile sums, term-major like the kernel's buffer.
  std::vector<float> tile_sums(static_cast<std::size_t>(kIcpTerms) * tiles);
#pragma omp parallel for schedule(static)
  for (int t = 0; t < tiles; ++t) {
    std::vector<float> threads(static_cast<std::size_t>(kIcpTerms) * kReduceThreads);  // [term][thread]
    float acc[kIcpTerms];
    for (int j = 0; j < kReduceThreads; ++j) {
      icp_thread_sum(in, t, j, acc);
      for (int k = 0; k < kIcpTerms; ++k) threads[k * kReduceThreads + j] = acc[k];
    }
    for (int k = 0; k < kIcpTerms; ++k)
      tile_sums[static_cast<std::size_t>(k) * tiles + t] = block_tree(threads.data() + k * kReduceThreads);
  }
  for (int k = 0; k < kIcpTerms; ++k) {
    double partial[kReduceThreads];
    for (int j = 0; j < kReduceThreads; ++j) {
      double s = 0.0;
      for (int t = j; t < tiles; t += kReduceThreads)
        s += static_cast<double>(tile_sums[static_cast<std::size_t>(k) * tiles + t]);
      partial[j] = s;
    }
    out[k] = block_tree(partial);
  }
}

}  // namespace s3d::fusion::detail
