// Greedy NMS over the suppression mask: the lexicographically first maximal independent set of the suppression
// graph, found by parallel rounds (Blelloch et al. 2012, "greedy sequential MIS is parallel"): a box is removed
// as soon as one of its suppressors is kept, and kept as soon as all of them are removed. Decisions are final,
// so the in-place (Gauss-Seidel) update is exact. One cooperative kernel runs all rounds with grid-wide syncs
// (no host round trip per round). Then the kept boxes are compacted in global rank order, which is the
// torchvision batched_nms output order (score descending, input index ascending).
#include <cooperative_groups.h>

#include <algorithm>
#include <cub/device/device_select.cuh>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

namespace cg = cooperative_groups;

constexpr int kScanBlock = 256;

__global__ void init_decisions_kernel(int m, const unsigned char* can_q, unsigned char* decision, unsigned* undecided) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q < 3) undecided[q] = 0;
  if (q < m) decision[q] = can_q[q] ? 0 : 1;  // boxes that intersect nothing are kept (dead ones dropped later)
}

/// Looks at the suppressors of box `t` of row tile `r` recorded in words [begin, end) (every `step`-th one):
/// `removed` once any of them is kept, `pending` while one is still undecided.
__device__ __forceinline__ void inspect_suppressors(volatile unsigned char* vstate, const int* pair_col,
                                                    const unsigned long long* words, int t, long long begin,
                                                    long long end, long long step, bool& removed, bool& pending) {
  for (long long k = begin; k < end && !removed; k += step) {
    unsigned long long w = words[k * kTile + t];
    if (!w) continue;
    const int base = pair_col[k] * kTile;
    while (w) {
      const int b = __ffsll(static_cast<long long>(w)) - 1;
      w &= w - 1;
      const unsigned char s = vstate[base + b];
      if (s == 1) {
        removed = true;
        break;
      }
      if (s == 0) pending = true;
    }
  }
}

/// All rounds of the parallel greedy scan in one cooperative kernel, one thread per box. state: 0 undecided,
/// 1 kept, 2 removed.
__global__ void scan_rounds_kernel(int m, const long long* offsets, const int* pair_col,
                                   const unsigned long long* words, unsigned char* state, unsigned* counters,
                                   int* rounds_out) {
  cg::grid_group grid = cg::this_grid();
  volatile unsigned char* vstate = state;
  const int stride = gridDim.x * blockDim.x;
  for (int round = 0;; ++round) {
    unsigned local = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride) {
      if (vstate[i] != 0) continue;
      const int r = i / kTile, t = i % kTile;
      bool pending = false, removed = false;
      inspect_suppressors(vstate, pair_col, words, t, offsets[r], offsets[r + 1], 1, removed, pending);
      if (removed) {
        vstate[i] = 2;
      } else if (!pending) {
        vstate[i] = 1;
      } else {
        ++local;
      }
    }
    if (round_settles_all(grid, counters, round, local, rounds_out)) return;
  }
}

/// scan_rounds_kernel with one warp per box (small problems): the lanes split the box's words, so a round is a
/// chain of ~4 dependent loads instead of one per word and per suppressor (latency, not work, bounds a round
/// there). Same decisions: removed once any suppressor is kept, kept once none is kept or undecided.
__global__ void scan_rounds_warp_kernel(int m, const long long* offsets, const int* pair_col,
                                        const unsigned long long* words, unsigned char* state, unsigned* counters,
                                        int* rounds_out) {
  cg::grid_group grid = cg::this_grid();
  volatile unsigned char* vstate = state;
  const int lane = threadIdx.x & 31;
  const int warp_id = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int warps = static_cast<int>((gridDim.x * blockDim.x) >> 5);
  for (int round = 0;; ++round) {
    unsigned local = 0;
    for (int i = warp_id; i < m; i += warps) {
      if (vstate[i] != 0) continue;  // warp-uniform: only this warp writes state[i]
      const int r = i / kTile, t = i % kTile;
      bool pending = false, removed = false;
      inspect_suppressors(vstate, pair_col, words, t, offsets[r] + lane, offsets[r + 1], 32, removed, pending);
      const bool any_removed = __any_sync(0xFFFFFFFFu, removed);
      const bool any_pending = __any_sync(0xFFFFFFFFu, pending);
      if (lane == 0) {
        if (any_removed) {
          vstate[i] = 2;
        } else if (!any_pending) {
          vstate[i] = 1;
        } else {
          ++local;
        }
      }
    }
    if (round_settles_all(grid, counters, round, local, rounds_out)) return;
  }
}

/// Kept flag by global rank.
__global__ void kept_by_rank_kernel(int m, const int* priority_q, const int* rank_of_priority,
                                    const unsigned* score_key_of_rank, const unsigned char* decision,
                                    unsigned char* kept_of_rank) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= m) return;
  const int p = priority_q[q];
  const int s = rank_of_priority ? rank_of_priority[p] : p;
  kept_of_rank[s] = (decision[q] == 1 && score_key_of_rank[s] != kDeadKey) ? 1 : 0;
}

__global__ void finish_output_kernel(const int* count, const int* kept_input, const float* scores_in,
                                     std::int64_t* keep, float* scores_out, std::int64_t* count_out) {
  const int n = *count;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int i = kept_input[k];
    keep[k] = i;
    scores_out[k] = scores_in[i];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = n;
}

}  // namespace

void resolve_greedy(int m, const TileMask& mask, const TiledBoxes& tiled, int sm_count, ScanBuffers& scan,
                    StreamHandle st) {
  scan.decision.resize(m, st);
  scan.undecided.resize(3, st);
  scan.rounds.resize(1, st);
  init_decisions_kernel<<<grid_for(m), 256, 0, st>>>(m, tiled.can_overlap.data(), scan.decision.data(),
                                                     scan.undecided.data());
  S3D_CUDA_CHECK_LAUNCH();
  if (scan.blocks_per_sm == 0) {  // a cooperative grid must fit the device at once
    S3D_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&scan.blocks_per_sm, scan_rounds_kernel, kScanBlock, 0));
    scan.blocks_per_sm = std::max(1, scan.blocks_per_sm);
    S3D_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&scan.warp_blocks_per_sm, scan_rounds_warp_kernel,
                                                                 kScanBlock, 0));
    scan.warp_blocks_per_sm = std::max(1, scan.warp_blocks_per_sm);
  }
  const bool warp_scan = m <= kWarpScanMaxBoxes;
  const unsigned scan_grid =
      warp_scan ? std::min<unsigned>(grid_for(static_cast<std::size_t>(m) * 32),
                                     static_cast<unsigned>(scan.warp_blocks_per_sm * sm_count))
                : std::min<unsigned>(grid_for(m), static_cast<unsigned>(scan.blocks_per_sm * sm_count));
  int m_arg = m;
  const long long* offsets = mask.pair_offset.data();
  const int* pair_col = mask.pair_col.data();
  const unsigned long long* words = mask.suppressor_words.data();
  unsigned char* state = scan.decision.data();
  unsigned* counters = scan.undecided.data();
  int* rounds = scan.rounds.data();
  void* args[] = {&m_arg, &offsets, &pair_col, &words, &state, &counters, &rounds};
  const void* kernel = warp_scan ? reinterpret_cast<const void*>(scan_rounds_warp_kernel)
                                 : reinterpret_cast<const void*>(scan_rounds_kernel);
  S3D_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(scan_grid), dim3(kScanBlock), args, 0, st));
}

void compact_kept(int n, int m, const Ranking& ranked, const TiledBoxes& tiled, const float* scores, ScanBuffers& scan,
                  CubScratch& cub, DeviceResult& result, StreamHandle st) {
  scan.kept_of_rank.resize(n, st);
  scan.kept_input.resize(n, st);
  scan.kept_count.resize(1, st);
  S3D_CUDA_CHECK(cudaMemsetAsync(scan.kept_of_rank.data(), 0, n, st));
  kept_by_rank_kernel<<<grid_for(m), 256, 0, st>>>(m, tiled.priority.data(), ranked.rank_of_priority,
                                                   ranked.score_key_of_rank, scan.decision.data(),
                                                   scan.kept_of_rank.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceSelect::Flagged(t, bytes, ranked.input_of_rank, scan.kept_of_rank.data(),
                                          scan.kept_input.data(), scan.kept_count.data(), n, st);
      },
      st);
  finish_output_kernel<<<grid_for(m), 256, 0, st>>>(scan.kept_count.data(), scan.kept_input.data(), scores,
                                                    result.keep.data(), result.scores.data(), result.count.data());
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::detection::detail
