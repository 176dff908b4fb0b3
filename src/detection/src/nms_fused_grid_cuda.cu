// Fused grid hard NMS: the path for mid-sized calls (above the one-block fused path's limit, nms_fused_cuda.cu,
// up to kFusedGridMaxBoxes boxes): three kernels over the whole device, no host synchronization, no CUB sort.
//  1. fused_grid_rank_kernel: each block holds every box's 32-bit descending score key in shared memory and ranks
//     32 boxes by counting the keys that order before theirs ((key, input index) is a total order, so the ranks
//     are the stable sort's: ties keep the lower index first; dead boxes, NaN or below min_score, sort last). It
//     scatters each box to its rank: input index, bounds, area, group.
//  2. fused_grid_mask_kernel: one 64-thread block per (row tile r, column tile c <= r) of the dense lower
//     triangle over the ranked boxes (groups are checked per pair); non-zero words are appended to the row box's
//     list (column tile, word).
//  3. fused_grid_scan_kernel (cooperative): greedy NMS by parallel rounds with grid-wide syncs, 8 lanes per box
//     (removed once a suppressor is kept, kept once all are removed: the general path's scan; the state is two
//     bitmaps by rank, kept and removed), then every block scans the kept counts of all tiles and the warps
//     write the output in rank order (max_dets without image ids on the device).
// Limits: hard NMS of axis-aligned boxes with pre_top_k inactive, at most kFusedGridMaxBoxes = 16384 boxes: the
// keys fill up to 64 KiB of each rank block's shared memory, the compaction gives each of a block's 256 threads
// one tile, and the lists hold up to n * ceil(n / 64) entries (10 bytes each: 42 MB at 16384, kept by the
// engine). The device must launch cooperatively and allow that shared memory (configure_fused_grid); otherwise
// the general pipeline runs, with identical results. The rank count and the dense triangle are O(n^2) work, so
// larger calls take the general pipeline (sorted, spatially pruned mask). Rounds are those of the general scan:
// one grid sync each, and suppression chains (e.g. tied scores along a line) need many rounds.
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdlib>
#include <cub/block/block_scan.cuh>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

namespace cg = cooperative_groups;

constexpr int kRankBlock = 512;
constexpr int kRankRows = 32;  // boxes ranked per block (the lanes of a warp); its warps split the keys
constexpr int kRankSlices = kRankBlock / 32;
constexpr int kGridMaxTiles = kFusedGridMaxBoxes / kTile;
constexpr int kGridScanBlock = 256;
static_assert(kGridScanBlock == kGridMaxTiles, "the compaction gives each thread of a block one tile");
constexpr int kScanLanes = 8;  // lanes per box in the scan
constexpr int kBoxesPerWarp = 32 / kScanLanes;
constexpr int kScanBatch = 4;          // list entries per lane whose loads are in flight together
constexpr int kKeyLoads = 8;           // score loads in flight per thread while the rank kernel fills its keys
constexpr int kRankStaticSmem = 4096;  // bound of the rank kernel's static shared memory (checked in configure)

__device__ __forceinline__ unsigned fused_grid_key(float s, float min_score) {
  unsigned bits;
  memcpy(&bits, &s, 4);
  return s >= min_score ? descending_score_key(s, bits) : kDeadKey;  // NaN fails
}

__global__ void __launch_bounds__(kRankBlock)
    fused_grid_rank_kernel(int n, int padded, const float* scores, float min_score, const float* boxes, int offset,
                           const std::int64_t* groups, int* order, float4* sbox, float* sarea, std::int64_t* sgroup,
                           unsigned long long* kept_bits, unsigned long long* removed_bits, int* list_count, int* m_out,
                           unsigned* counters) {
  extern __shared__ __align__(16) unsigned fused_grid_keys[];  // `padded` keys, kDeadKey past n
  __shared__ int part[kRankSlices][kRankRows];
  __shared__ int live;
  if (threadIdx.x == 0) live = 0;
  __syncthreads();
  int mine_live = 0;
  for (int j0 = threadIdx.x; j0 < padded; j0 += kRankBlock * kKeyLoads) {  // kKeyLoads loads in flight
    float v[kKeyLoads];
#pragma unroll
    for (int u = 0; u < kKeyLoads; ++u) {
      const int j = j0 + u * kRankBlock;
      v[u] = j < n ? __ldg(scores + j) : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kKeyLoads; ++u) {
      const int j = j0 + u * kRankBlock;
      if (j >= padded) break;
      const unsigned k = j < n ? fused_grid_key(v[u], min_score) : kDeadKey;
      fused_grid_keys[j] = k;
      mine_live += k != kDeadKey;
    }
  }
  if (mine_live) atomicAdd(&live, mine_live);
  __syncthreads();
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int row0 = blockIdx.x * kRankRows;
  const int i = row0 + lane;
  const unsigned mine = i < n ? fused_grid_keys[i] : kDeadKey;
  // Rank = keys before row0 that are <= mine + keys from row0 + 32 on that are < mine + the block's own rows
  // ordered by (key, index). Padding keys (kDeadKey, index >= n > i) never count.
  const int quads = padded / 4;
  const int per = (quads + kRankSlices - 1) / kRankSlices;
  const int q0 = min(quads, w * per), q1 = min(quads, q0 + per);
  const int d0 = row0 / 4, d1 = (row0 + kRankRows) / 4;
  const uint4* k4 = reinterpret_cast<const uint4*>(fused_grid_keys);
  int cnt = 0;
  for (int q = q0; q < min(q1, d0); ++q) {
    const uint4 v = k4[q];
    cnt += (v.x <= mine) + (v.y <= mine) + (v.z <= mine) + (v.w <= mine);
  }
  for (int q = max(q0, d1); q < q1; ++q) {
    const uint4 v = k4[q];
    cnt += (v.x < mine) + (v.y < mine) + (v.z < mine) + (v.w < mine);
  }
  for (int q = max(q0, d0); q < min(q1, d1); ++q) {
    for (int c = 0; c < 4; ++c) {
      const int j = q * 4 + c;
      const unsigned k = fused_grid_keys[j];
      cnt += (k < mine || (k == mine && j < i)) ? 1 : 0;
    }
  }
  part[w][lane] = cnt;
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) *m_out = live;
  if (blockIdx.x == 0 && threadIdx.x < 3) counters[threadIdx.x] = 0;
  if (blockIdx.x == 0 && threadIdx.x < kGridMaxTiles) kept_bits[threadIdx.x] = removed_bits[threadIdx.x] = 0;
  if (w != 0 || i >= n) return;
  int r = 0;
#pragma unroll
  for (int s = 0; s < kRankSlices; ++s) r += part[s][lane];
  const float* q = boxes + static_cast<std::size_t>(i) * 4;
  order[r] = i;
  const AxisBox a = make_axis_box(q, offset);
  sbox[r] = make_float4(a.x1, a.y1, a.x2, a.y2);
  sarea[r] = a.area;
  if (groups) sgroup[r] = groups[i];
  list_count[r] = 0;
}

/// A box that cannot overlap anything (zero-area or inverted, without the +1 offset) is never a candidate of
/// overlap_candidates, so no flag is needed here.
template <bool kGrouped>
__global__ void __launch_bounds__(kTile)
    fused_grid_mask_kernel(int cap, const int* m_ptr, const float4* sbox, const float* sarea,
                           const std::int64_t* sgroup, int offset, float thr, bool ge, int* list_count,
                           unsigned short* list_col, unsigned long long* list_word) {
  int r, c;
  lower_triangle_tile(blockIdx.x, r, c);
  const int m = *m_ptr;
  if (r * kTile >= m) return;  // uniform over the block
  __shared__ float4 cbounds[kTile];
  __shared__ float carea[kTile];
  __shared__ std::int64_t cgroup[kGrouped ? kTile : 1];
  const int t = threadIdx.x;
  const int j = c * kTile + t;
  const int i = r * kTile + t;
  AxisBox mine{};  // loaded before the barrier: both loads in flight at once
  std::int64_t gi = 0;
  if (i < m) {
    const float4 q = sbox[i];
    mine = AxisBox{q.x, q.y, q.z, q.w, sarea[i]};
    if constexpr (kGrouped) gi = sgroup[i];
  }
  if (j < m) {
    cbounds[t] = sbox[j];
    carea[t] = sarea[j];
    if constexpr (kGrouped) cgroup[t] = sgroup[j];
  }
  __syncthreads();
  if (i >= m) return;
  const int kend = c == r ? t : min(kTile, m - c * kTile);  // only higher-ranked live boxes
  // The candidates first (overlap_candidates), then the IoU of each.
  unsigned long long cand = overlap_candidates<kTile>(cbounds, mine, offset, kend);
  unsigned long long bits = 0;
  while (cand) {
    const int k = pop_lowest(cand);
    if constexpr (kGrouped) {
      if (cgroup[k] != gi) continue;
    }
    const float4 o = cbounds[k];
    const AxisBox ob{o.x, o.y, o.z, o.w, carea[k]};
    if (iou_passes(axis_iou(ob, mine, offset), thr, ge)) bits |= 1ull << k;
  }
  if (bits) {
    const int pos = atomicAdd(&list_count[i], 1);
    list_col[static_cast<std::size_t>(i) * cap + pos] = static_cast<unsigned short>(c);
    list_word[static_cast<std::size_t>(i) * cap + pos] = bits;
  }
}

__device__ __forceinline__ unsigned long long load_bits(const unsigned long long* p) {
  return *static_cast<const volatile unsigned long long*>(p);
}

/// kScanBatch entries of a box's list for one lane: entries e0, e0 + kScanLanes, ... (word 0 past the end).
struct ListBatch {
  int col[kScanBatch];
  unsigned long long word[kScanBatch];
};

__device__ __forceinline__ ListBatch load_batch(std::size_t row, int e0, int cnt, const unsigned short* list_col,
                                                const unsigned long long* list_word) {
  ListBatch b;
#pragma unroll
  for (int u = 0; u < kScanBatch; ++u) {
    const int e = e0 + u * kScanLanes;
    b.col[u] = e < cnt ? list_col[row + e] : 0;
    b.word[u] = e < cnt ? list_word[row + e] : 0;
  }
  return b;
}

/// Checks a batch against the state: `removed` once a suppressor is kept, `pending` while one is undecided.
__device__ __forceinline__ void check_batch(const ListBatch& b, const unsigned long long* kept_bits,
                                            const unsigned long long* removed_bits, bool& removed, bool& pending) {
  unsigned long long k[kScanBatch], r[kScanBatch];
#pragma unroll
  for (int u = 0; u < kScanBatch; ++u) {  // independent loads, in flight together
    k[u] = b.word[u] ? load_bits(kept_bits + b.col[u]) : 0;
    r[u] = b.word[u] ? load_bits(removed_bits + b.col[u]) : 0;
  }
#pragma unroll
  for (int u = 0; u < kScanBatch; ++u) {
    if (b.word[u] & k[u]) removed = true;
    if (b.word[u] & ~(k[u] | r[u])) pending = true;
  }
}

/// One lane group's round on box i: checks its list (from `first` on: the batch already in registers, or none)
/// and records the decision, if any; the ballots need every lane of the warp. True once i is decided.
__device__ __forceinline__ bool decide_box(int i, bool open_box, int cnt, std::size_t row, const ListBatch* first,
                                           int sub_lane, unsigned sub_mask, const unsigned short* list_col,
                                           const unsigned long long* list_word, unsigned long long* kept_bits,
                                           unsigned long long* removed_bits, unsigned& undecided) {
  constexpr int kStride = kScanLanes * kScanBatch;
  bool removed = false, pending = false;
  if (open_box) {
    int e0 = sub_lane;
    if (first) {
      check_batch(*first, kept_bits, removed_bits, removed, pending);
      e0 += kStride;
    }
    for (; e0 < cnt && !removed; e0 += kStride)
      check_batch(load_batch(row, e0, cnt, list_col, list_word), kept_bits, removed_bits, removed, pending);
  }
  const unsigned any_removed = __ballot_sync(0xFFFFFFFFu, removed) & sub_mask;
  const unsigned any_pending = __ballot_sync(0xFFFFFFFFu, pending) & sub_mask;
  if (!open_box) return true;
  const bool decided = any_removed || !any_pending;
  if (sub_lane == 0) {
    const unsigned long long bit = 1ull << (i % kTile);
    if (any_removed)
      atomicOr(removed_bits + i / kTile, bit);
    else if (!any_pending)
      atomicOr(kept_bits + i / kTile, bit);
    else
      ++undecided;
  }
  return decided;
}

/// Greedy NMS by rounds (the general scan's rule: an undecided box is removed once one of its suppressors is
/// kept, kept once all of them are removed; decisions are final, so reading a newer state within a round is
/// exact). The state is two bitmaps by rank (kept, removed: each box sets one bit, once, by an atomic OR), so a
/// list entry (column tile, word) is checked with two word loads. kScanLanes lanes walk a box's list, a batch of
/// kScanBatch entries per lane with independent loads; the loop is warp-uniform for the ballots. When the grid
/// has a lane group for every box, each group keeps its box's count, its first batch of the list and its own
/// decision in registers across the rounds, so a round is only the state's loads and the grid sync.
__global__ void __launch_bounds__(kGridScanBlock)
    fused_grid_scan_kernel(int cap, const int* m_ptr, const int* list_count, const unsigned short* list_col,
                           const unsigned long long* list_word, unsigned long long* kept_bits,
                           unsigned long long* removed_bits, unsigned* counters, int* rounds_out, const int* order,
                           const float* scores_in, long long max_dets, std::int64_t* keep, float* scores_out,
                           std::int64_t* count_out) {
  cg::grid_group grid = cg::this_grid();
  const int m = *m_ptr;
  const int lane = threadIdx.x & 31;
  const int warp_id = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int warps = static_cast<int>((gridDim.x * blockDim.x) >> 5);
  const int sub = lane / kScanLanes, sub_lane = lane % kScanLanes;
  const unsigned sub_mask = ((1u << kScanLanes) - 1u) << (sub * kScanLanes);
  if (m <= warps * kBoxesPerWarp) {  // uniform over the grid
    const int i = warp_id * kBoxesPerWarp + sub;
    const int cnt = i < m ? list_count[i] : 0;
    const std::size_t row = static_cast<std::size_t>(i) * cap;
    const ListBatch first = load_batch(row, sub_lane, cnt, list_col, list_word);
    bool open_box = i < m;
    for (int round = 0;; ++round) {
      unsigned undecided = 0;
      open_box = !decide_box(i, open_box, cnt, row, &first, sub_lane, sub_mask, list_col, list_word, kept_bits,
                             removed_bits, undecided);
      if (round_settles_all(grid, counters, round, undecided, rounds_out)) break;
    }
  } else {
    for (int round = 0;; ++round) {
      unsigned undecided = 0;
      for (int i0 = warp_id * kBoxesPerWarp; i0 < m; i0 += warps * kBoxesPerWarp) {
        const int i = i0 + sub;
        bool open_box = false;  // only this group sets i's bits, after the ballots: the same for its lanes
        int cnt = 0;            // loaded beside the bitmaps
        if (i < m) {
          const unsigned long long bit = 1ull << (i % kTile);
          cnt = list_count[i];
          open_box = !((load_bits(kept_bits + i / kTile) | load_bits(removed_bits + i / kTile)) & bit);
        }
        decide_box(i, open_box, cnt, static_cast<std::size_t>(i) * cap, nullptr, sub_lane, sub_mask, list_col,
                   list_word, kept_bits, removed_bits, undecided);
      }
      if (round_settles_all(grid, counters, round, undecided, rounds_out)) break;
    }
  }
  // Compaction in rank order: every block scans the kept counts of all tiles (thread t: tile t), then the warps
  // of the grid write a tile each. Boxes from m on are never kept.
  using Scan = cub::BlockScan<int, kGridScanBlock>;
  __shared__ typename Scan::TempStorage scan_temp;
  __shared__ unsigned long long kept[kGridMaxTiles];
  __shared__ int tile_offset[kGridMaxTiles];
  __shared__ int total;
  const int t = threadIdx.x;
  const int tiles = (m + kTile - 1) / kTile;
  const unsigned long long mask = t < tiles ? load_bits(kept_bits + t) : 0ull;
  kept[t] = mask;
  int off = 0, sum = 0;
  Scan(scan_temp).ExclusiveSum(__popcll(mask), off, sum);
  tile_offset[t] = off;
  if (t == 0) total = sum;
  __syncthreads();
  const long long limit = max_dets > 0 ? min(static_cast<long long>(total), max_dets) : total;
  for (int tile = warp_id; tile < tiles; tile += warps) {
    const unsigned long long w = kept[tile];
    for (int b = lane; b < kTile; b += 32) {
      if (!((w >> b) & 1ull)) continue;
      const long long pos = tile_offset[tile] + __popcll(w & ((1ull << b) - 1ull));
      if (pos >= limit) continue;
      const int i = order[tile * kTile + b];
      keep[pos] = i;
      scores_out[pos] = scores_in[i];
    }
  }
  if (grid.thread_rank() == 0) *count_out = limit;
}

}  // namespace

int fused_grid_max_boxes_from_env() {
  if (const char* env = std::getenv("S3D_NMS_FUSED_GRID_MAX_BOXES"))
    return std::min(kFusedGridMaxBoxes, std::max(0, std::atoi(env)));
  return kFusedGridMaxBoxes;
}

void configure_fused_grid(int device, int optin_bytes, int requested, FusedGridBuffers& b) {
  b.max_boxes = 0;
  int coop = 0;
  S3D_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
  if (!coop || requested <= 0) return;
  cudaFuncAttributes attr{};
  S3D_CUDA_CHECK(cudaFuncGetAttributes(&attr, fused_grid_rank_kernel));
  if (attr.sharedSizeBytes > static_cast<std::size_t>(kRankStaticSmem)) return;
  // The keys of `padded` boxes (a multiple of 64) must fit beside the static shared memory.
  const int fits = std::min(kFusedGridMaxBoxes, (optin_bytes - kRankStaticSmem) / 4 / kTile * kTile);
  const int max_boxes = std::min(requested, fits);
  if (max_boxes <= 0) return;
  const int padded_max = (max_boxes + kTile - 1) / kTile * kTile;
  S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_grid_rank_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      padded_max * static_cast<int>(sizeof(unsigned))));
  S3D_CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b.blocks_per_sm, fused_grid_scan_kernel, kGridScanBlock, 0));
  if (b.blocks_per_sm <= 0) return;
  b.max_boxes = max_boxes;
}

bool fused_grid_applies(const NmsInput& in, const NmsParams& prm, int max_boxes) {
  return prm.method == NmsMethod::kHard && !prm.rotated && in.count > 0 && in.count <= max_boxes &&
         (prm.pre_top_k == 0 || prm.pre_top_k >= in.count);
}

long long fused_grid_nms(const NmsInput& in, const NmsParams& prm, int sm_count, FusedGridBuffers& b,
                         DeviceResult& result, StreamHandle st) {
  const int n = static_cast<int>(in.count);
  const int tiles = (n + kTile - 1) / kTile;
  const int padded = tiles * kTile;
  b.input_of_rank.resize(n, st);
  b.boxes.resize(n, st);
  b.areas.resize(n, st);
  b.groups.resize(in.group_ids ? n : 1, st);
  b.kept_bits.resize(kGridMaxTiles, st);
  b.removed_bits.resize(kGridMaxTiles, st);
  b.live_count.resize(1, st);
  b.counters.resize(3, st);
  b.rounds.resize(1, st);
  b.suppressor_count.resize(n, st);
  b.suppressor_tile.resize(static_cast<std::size_t>(n) * tiles, st);
  b.suppressor_word.resize(static_cast<std::size_t>(n) * tiles, st);
  fused_grid_rank_kernel<<<static_cast<unsigned>((n + kRankRows - 1) / kRankRows), kRankBlock,
                           static_cast<std::size_t>(padded) * sizeof(unsigned), st>>>(
      n, padded, in.scores, prm.min_score, in.boxes, prm.pixel_offset, in.group_ids, b.input_of_rank.data(),
      b.boxes.data(), b.areas.data(), in.group_ids ? b.groups.data() : nullptr, b.kept_bits.data(),
      b.removed_bits.data(), b.suppressor_count.data(), b.live_count.data(), b.counters.data());
  S3D_CUDA_CHECK_LAUNCH();
  const long long pairs = static_cast<long long>(tiles) * (tiles + 1) / 2;
  if (in.group_ids) {
    fused_grid_mask_kernel<true><<<static_cast<unsigned>(pairs), kTile, 0, st>>>(
        tiles, b.live_count.data(), b.boxes.data(), b.areas.data(), b.groups.data(), prm.pixel_offset,
        prm.iou_threshold, prm.suppress_at_equal, b.suppressor_count.data(), b.suppressor_tile.data(),
        b.suppressor_word.data());
  } else {
    fused_grid_mask_kernel<false><<<static_cast<unsigned>(pairs), kTile, 0, st>>>(
        tiles, b.live_count.data(), b.boxes.data(), b.areas.data(), nullptr, prm.pixel_offset, prm.iou_threshold,
        prm.suppress_at_equal, b.suppressor_count.data(), b.suppressor_tile.data(), b.suppressor_word.data());
  }
  S3D_CUDA_CHECK_LAUNCH();
  // A few blocks per SM: enough warps for a box or a few each, fewer blocks to meet at each grid sync.
  const int grid = std::max(1, std::min({b.blocks_per_sm, 4}) * sm_count);
  const unsigned scan_grid = std::min<unsigned>(static_cast<unsigned>(grid),
                                                grid_for(static_cast<std::size_t>(n) * kScanLanes, kGridScanBlock));
  int cap = tiles;
  const int* m_ptr = b.live_count.data();
  const int* list_count = b.suppressor_count.data();
  const unsigned short* list_col = b.suppressor_tile.data();
  const unsigned long long* list_word = b.suppressor_word.data();
  unsigned long long* kept_bits = b.kept_bits.data();
  unsigned long long* removed_bits = b.removed_bits.data();
  unsigned* counters = b.counters.data();
  int* rounds = b.rounds.data();
  const int* order = b.input_of_rank.data();
  const float* scores_in = in.scores;
  long long max_dets = in.image_ids ? 0 : prm.max_dets;
  std::int64_t* keep = result.keep.data();
  float* scores_out = result.scores.data();
  std::int64_t* count_out = result.count.data();
  void* args[] = {&cap,    &m_ptr, &list_count, &list_col, &list_word, &kept_bits,  &removed_bits, &counters,
                  &rounds, &order, &scores_in,  &max_dets, &keep,      &scores_out, &count_out};
  S3D_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(fused_grid_scan_kernel), dim3(scan_grid),
                                             dim3(kGridScanBlock), args, 0, st));
  return pairs;
}

}  // namespace s3d::detection::detail
