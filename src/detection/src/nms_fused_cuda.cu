// Fused small hard NMS (axis-aligned, up to kFusedMaxBoxes boxes): three kernels, no host synchronization.
//  1. fused_sort_kernel (one block): stable block radix sort of the 32-bit descending score keys, values = input
//     index (blocked load order = index order, so ties keep the lower index first); dead scores sort last and
//     `m` counts the live ones. The boxes stay in global rank order (groups are checked per pair: the greedy
//     decisions of independent groups do not interact, so no group-major order is needed).
//  2. fused_mask_kernel: one 64-thread block per (row tile r, column tile c <= r) of the dense lower triangle;
//     row box i gets the bits of the higher-ranked boxes of tile c of its group whose IoU with it passes. Only
//     non-zero words are stored, appended to the row box's list (column, word) by an atomic counter.
//  3. fused_scan_kernel (one block): greedy NMS by parallel rounds over the lists with block barriers (a box is
//     removed once a suppressor is kept, kept once all are removed), then the compaction to the output.
// Rounds beat resolving the tiles in order with a warp per tile polling shared-memory flags, and the path is
// on by default only where it beats the general pipeline (docs/PERFORMANCE.md has the measurements).
#include <algorithm>
#include <cstdlib>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

constexpr int kFusedMaxBoxes = 16384;  // capacity of the fused kernels (shared-memory bitmaps, sort sizes)
constexpr int kFusedDefaultMaxBoxes = 1024;
constexpr int kFusedMaxTiles = kFusedMaxBoxes / kTile;
constexpr int kFusedScanThreads = 1024;
constexpr int kFusedBatch = 8;  // boxes per thread whose lists are walked together in a scan round

/// The sort's dynamic shared memory: CUB's storage, then the live-box counter (kept out of static shared memory
/// so that kSmem is the kernel's whole shared-memory need, as fused_max_boxes_for() assumes).
template <int kThreads, int kItems>
struct FusedSort {
  using Sort = cub::BlockRadixSort<unsigned, kThreads, kItems, int>;
  static constexpr std::size_t kLiveOffset = (sizeof(typename Sort::TempStorage) + 15) / 16 * 16;
  static constexpr std::size_t kSmem = kLiveOffset + 16;
};

template <int kThreads, int kItems, int kVariant>
constexpr bool fused_sort_matches_variant() {
  return kFusedSortVariants[kVariant].max_boxes == kThreads * kItems &&
         static_cast<std::size_t>(kFusedSortVariants[kVariant].smem_bytes) == FusedSort<kThreads, kItems>::kSmem;
}
static_assert(fused_sort_matches_variant<256, 4, 0>() && fused_sort_matches_variant<512, 8, 1>() &&
                  fused_sort_matches_variant<1024, 16, 2>(),
              "kFusedSortVariants (nms_fused_limits.hpp) must state the fused sort kernels' shared memory");
static_assert(kFusedSortVariants[2].max_boxes == kFusedMaxBoxes, "the largest sort variant is the fused capacity");

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads, 1)
    fused_sort_kernel(int n, const float* scores, float min_score, int* order, int* m_out, int* list_count) {
  using Sort = typename FusedSort<kThreads, kItems>::Sort;
  extern __shared__ __align__(16) unsigned char fused_smem[];
  int& live = *reinterpret_cast<int*>(fused_smem + FusedSort<kThreads, kItems>::kLiveOffset);
  if (threadIdx.x == 0) live = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) list_count[i] = 0;
  __syncthreads();
  unsigned keys[kItems];
  int vals[kItems];
  int mine = 0;
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int i = threadIdx.x * kItems + k;  // blocked: the stable sort keeps index order among equal keys
    keys[k] = kDeadKey;
    vals[k] = i;
    if (i < n) {
      const float s = scores[i];
      unsigned bits;
      memcpy(&bits, &s, 4);
      if (s >= min_score) {  // NaN fails
        keys[k] = descending_score_key(s, bits);
        ++mine;
      }
    }
  }
  if (mine) atomicAdd(&live, mine);
  Sort(*reinterpret_cast<typename Sort::TempStorage*>(fused_smem)).Sort(keys, vals);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const int r = threadIdx.x * kItems + k;
    if (r < n) order[r] = vals[k];
  }
  __syncthreads();
  if (threadIdx.x == 0) *m_out = live;
}

__global__ void __launch_bounds__(kTile)
    fused_mask_kernel(int cap, const int* m_ptr, const int* order, const float* boxes, const std::int64_t* groups,
                      int offset, float thr, bool ge, int* list_count, unsigned short* list_col,
                      unsigned long long* list_word) {
  int r, c;
  lower_triangle_tile(blockIdx.x, r, c);
  const int m = *m_ptr;
  if (r * kTile >= m) return;  // uniform over the block
  __shared__ AxisBox sbox[kTile];
  __shared__ std::int64_t sgroup[kTile];
  const int t = threadIdx.x;
  const int j = c * kTile + t;
  if (j < m) {
    const float* q = boxes + static_cast<std::size_t>(order[j]) * 4;
    sbox[t] = make_axis_box(q, offset);
    sgroup[t] = groups ? groups[order[j]] : 0;
  }
  __syncthreads();
  const int i = r * kTile + t;
  if (i >= m) return;
  const float* q = boxes + static_cast<std::size_t>(order[i]) * 4;
  if (!(offset != 0 || (q[2] > q[0] && q[3] > q[1]))) return;  // cannot overlap anything: no bits
  const AxisBox mine = make_axis_box(q, offset);
  const std::int64_t gi = groups ? groups[order[i]] : 0;
  const int kend = c == r ? t : min(kTile, m - c * kTile);  // only higher-ranked live boxes
  unsigned long long cand = overlap_candidates<kTile>(sbox, mine, offset, kend);
  unsigned long long bits = 0;
  while (cand) {
    const int k = pop_lowest(cand);
    if (sgroup[k] != gi) continue;
    if (iou_passes(axis_iou(sbox[k], mine, offset), thr, ge)) bits |= 1ull << k;
  }
  if (bits) {
    const int pos = atomicAdd(&list_count[i], 1);
    list_col[static_cast<std::size_t>(i) * cap + pos] = static_cast<unsigned short>(c);
    list_word[static_cast<std::size_t>(i) * cap + pos] = bits;
  }
}

/// Greedy NMS over the fused lists by rounds in one block (the cooperative path's rule, with block barriers): an
/// undecided box is removed once one of its suppressors is kept, kept once all of them are removed. Decisions
/// are final, and the highest-ranked undecided box is decided in every round. The state is two bitmaps (kept,
/// removed) of 64-bit tile words in shared memory, read from `cur` and set in `nxt` (atomics) within a round.
/// Thread k owns boxes k, k + 1024, ... (at most 16), its undecided set is a register bit mask.
__global__ void __launch_bounds__(kFusedScanThreads, 1)
    fused_scan_kernel(int cap, const int* m_ptr, const int* list_count, const unsigned short* list_col,
                      const unsigned long long* list_word, const int* order, const float* scores_in, long long max_dets,
                      std::int64_t* keep, float* scores_out, std::int64_t* count_out) {
  constexpr int kPerThread = kFusedMaxBoxes / kFusedScanThreads;
  __shared__ unsigned long long kept[kFusedMaxTiles], removed[kFusedMaxTiles];
  __shared__ unsigned long long kept_nxt[kFusedMaxTiles], removed_nxt[kFusedMaxTiles];
  using Scan = cub::BlockScan<int, kFusedScanThreads>;
  __shared__ typename Scan::TempStorage scan_temp;
  __shared__ int tile_offset[kFusedMaxTiles];
  __shared__ int total;
  const int m = *m_ptr;
  const int tiles = (m + kTile - 1) / kTile;
  for (int k = threadIdx.x; k < kFusedMaxTiles; k += blockDim.x) {
    kept[k] = removed[k] = kept_nxt[k] = removed_nxt[k] = 0;
  }
  unsigned undecided = 0;
#pragma unroll
  for (int s = 0; s < kPerThread; ++s) {
    if (static_cast<int>(threadIdx.x) + s * kFusedScanThreads < m) undecided |= 1u << s;
  }
  __syncthreads();
  while (__syncthreads_or(undecided != 0)) {
    // Batches of kFusedBatch boxes per thread walk their lists together: independent loads, one L2 round trip
    // per list position instead of one per entry.
    for (int s0 = 0; s0 < kPerThread; s0 += kFusedBatch) {
      const unsigned bm = (undecided >> s0) & ((1u << kFusedBatch) - 1u);
      if (!bm) continue;
      int cnt[kFusedBatch];
      int maxc = 0;
#pragma unroll
      for (int b = 0; b < kFusedBatch; ++b) {
        cnt[b] = ((bm >> b) & 1u) ? __ldg(&list_count[threadIdx.x + (s0 + b) * kFusedScanThreads]) : 0;
      }
#pragma unroll
      for (int b = 0; b < kFusedBatch; ++b) maxc = max(maxc, cnt[b]);
      unsigned any_kept = 0, open = 0;  // per box: a kept suppressor / a suppressor not yet removed
      for (int e = 0; e < maxc; ++e) {
        int cc[kFusedBatch];
        unsigned long long cw[kFusedBatch];
#pragma unroll
        for (int b = 0; b < kFusedBatch; ++b) {
          cc[b] = -1;
          cw[b] = 0;
          if (e < cnt[b] && !((any_kept >> b) & 1u)) {
            const std::size_t idx = static_cast<std::size_t>(threadIdx.x + (s0 + b) * kFusedScanThreads) * cap + e;
            cc[b] = __ldg(&list_col[idx]);
            cw[b] = __ldg(&list_word[idx]);
          }
        }
#pragma unroll
        for (int b = 0; b < kFusedBatch; ++b) {
          if (cc[b] < 0) continue;
          if (cw[b] & kept[cc[b]]) {
            any_kept |= 1u << b;
          } else if (cw[b] & ~removed[cc[b]]) {
            open |= 1u << b;
          }
        }
      }
#pragma unroll
      for (int b = 0; b < kFusedBatch; ++b) {
        if (!((bm >> b) & 1u)) continue;
        const bool rem = (any_kept >> b) & 1u;
        if (!rem && ((open >> b) & 1u)) continue;
        const int i = threadIdx.x + (s0 + b) * kFusedScanThreads;
        undecided &= ~(1u << (s0 + b));
        atomicOr(rem ? &removed_nxt[i / kTile] : &kept_nxt[i / kTile], 1ull << (i % kTile));
      }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < tiles; k += blockDim.x) {
      kept[k] = kept_nxt[k];
      removed[k] = removed_nxt[k];
    }
  }
  __syncthreads();
  // Compaction in rank order (= output order): tile offsets by a block scan of the popcounts.
  const int pc = threadIdx.x < tiles ? __popcll(kept[threadIdx.x]) : 0;
  int off = 0, sum = 0;
  Scan(scan_temp).ExclusiveSum(pc, off, sum);
  if (threadIdx.x < kFusedMaxTiles) tile_offset[threadIdx.x] = off;
  if (threadIdx.x == 0) total = sum;
  __syncthreads();
  const long long limit = max_dets > 0 ? min(static_cast<long long>(total), max_dets) : total;
  for (int r = threadIdx.x; r < tiles * kTile; r += blockDim.x) {
    const int t = r / kTile, b = r % kTile;
    const unsigned long long w = kept[t];
    if (!((w >> b) & 1ull)) continue;
    const int pos = tile_offset[t] + __popcll(w & ((1ull << b) - 1ull));
    if (pos >= limit) continue;
    const int i = order[r];
    keep[pos] = i;
    scores_out[pos] = scores_in[i];
  }
  if (threadIdx.x == 0) *count_out = limit;
}

}  // namespace

int fused_max_boxes_from_env() {
  if (const char* env = std::getenv("S3D_NMS_FUSED_MAX_BOXES"))
    return std::min(kFusedMaxBoxes, std::max(0, std::atoi(env)));
  return kFusedDefaultMaxBoxes;
}

void configure_fused_kernels(int max_boxes) {
  if (max_boxes > 0) {
    S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_sort_kernel<256, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(FusedSort<256, 4>::kSmem)));
  }
  if (max_boxes > kFusedSortVariants[0].max_boxes) {
    S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_sort_kernel<512, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(FusedSort<512, 8>::kSmem)));
  }
  if (max_boxes > kFusedSortVariants[1].max_boxes) {
    S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_sort_kernel<1024, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(FusedSort<1024, 16>::kSmem)));
  }
}

bool fused_applies(const NmsInput& in, const NmsParams& prm, int max_boxes) {
  return prm.method == NmsMethod::kHard && !prm.rotated && in.count > 0 && in.count <= max_boxes &&
         (prm.pre_top_k == 0 || prm.pre_top_k >= in.count);
}

long long fused_nms(const NmsInput& in, const NmsParams& prm, FusedBuffers& b, DeviceResult& result, StreamHandle st) {
  const int n = static_cast<int>(in.count);
  const int tiles = (n + kTile - 1) / kTile;
  b.input_of_rank.resize(n, st);
  b.live_count.resize(1, st);
  b.suppressor_count.resize(n, st);
  b.suppressor_tile.resize(static_cast<std::size_t>(n) * tiles, st);
  b.suppressor_word.resize(static_cast<std::size_t>(n) * tiles, st);
  if (n <= kFusedSortVariants[0].max_boxes) {
    fused_sort_kernel<256, 4><<<1, 256, FusedSort<256, 4>::kSmem, st>>>(
        n, in.scores, prm.min_score, b.input_of_rank.data(), b.live_count.data(), b.suppressor_count.data());
  } else if (n <= kFusedSortVariants[1].max_boxes) {
    fused_sort_kernel<512, 8><<<1, 512, FusedSort<512, 8>::kSmem, st>>>(
        n, in.scores, prm.min_score, b.input_of_rank.data(), b.live_count.data(), b.suppressor_count.data());
  } else {
    fused_sort_kernel<1024, 16><<<1, 1024, FusedSort<1024, 16>::kSmem, st>>>(
        n, in.scores, prm.min_score, b.input_of_rank.data(), b.live_count.data(), b.suppressor_count.data());
  }
  S3D_CUDA_CHECK_LAUNCH();
  const long long pairs = static_cast<long long>(tiles) * (tiles + 1) / 2;
  fused_mask_kernel<<<static_cast<unsigned>(pairs), kTile, 0, st>>>(
      tiles, b.live_count.data(), b.input_of_rank.data(), in.boxes, in.group_ids, prm.pixel_offset, prm.iou_threshold,
      prm.suppress_at_equal, b.suppressor_count.data(), b.suppressor_tile.data(), b.suppressor_word.data());
  S3D_CUDA_CHECK_LAUNCH();
  fused_scan_kernel<<<1, kFusedScanThreads, 0, st>>>(tiles, b.live_count.data(), b.suppressor_count.data(),
                                                     b.suppressor_tile.data(), b.suppressor_word.data(),
                                                     b.input_of_rank.data(), in.scores, in.image_ids ? 0 : prm.max_dets,
                                                     result.keep.data(), result.scores.data(), result.count.data());
  S3D_CUDA_CHECK_LAUNCH();
  return pairs;
}

}  // namespace s3d::detection::detail
