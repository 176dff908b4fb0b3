// CUDA backend of NMS: all groups in one batched pipeline, exact (same pair math as the CPU backend).
//
// Hard NMS, for M boxes of G groups:
//  1. rank: stable radix sort by score (descending), then stable by group -> priority order p (group-major,
//     score descending, input index ascending). `min_score` / NaN scores sort last and are cut off.
//  2. spatial order q: within each group, boxes are re-sorted by the Morton code of their centre, so that a
//     64-box tile covers a small area.
//  3. sparse bitmask: a 64x64 tile pair (row tile r, column tile c) is evaluated only when the two tiles'
//     bounds overlap and they share a group. Row box i's 64-bit word for tile c holds bit j iff j is in
//     i's group, ranks higher than i, and IoU(j, i) passes: the "upper triangle" of the priority order,
//     stored per suppressed box. Memory is pairs x 64 words, not M^2/64.
//  4. scan: greedy NMS = the lexicographically first maximal independent set of this graph. It is found by
//     parallel rounds (Blelloch et al. 2012, "greedy sequential MIS is parallel"): a box is removed as soon
//     as one of its suppressors is kept, and kept as soon as all of them are removed; decisions are final,
//     so the in-place (Gauss-Seidel) update is exact. One cooperative kernel runs all rounds with grid-wide
//     syncs; there is no 64-thread serial scan and no host round trip per round. Up to 16,384 boxes a warp
//     resolves one box (its lanes split the words: a round is then a few dependent loads, not dozens).
//  5. output: kept flags by global rank give the torchvision batched_nms order (score desc, index asc).
// Soft-NMS: one block per group runs mmcv's selection loop (block-wide argmax, parallel decay); groups of up to
// ~11k boxes keep bounds and indices in shared memory and scores in registers (soft_small_kernel).
// Sync-free device-resident calls are captured into a CUDA graph and replayed when they repeat (run_device).
// Small hard axis-aligned calls (up to 1024 boxes by default) take the fused path instead: three kernels, no host
// synchronization even with min_score (see fused_sort_kernel below).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <vector>

#include "nms_backend.hpp"
#include "nms_math.hpp"
#include "s3d/core/cuda_arch.cuh"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::detection::detail {
namespace {

namespace cg = cooperative_groups;

constexpr int kTile = 64;
constexpr unsigned kDeadKey = 0xFFFFFFFFu;

__host__ __device__ inline unsigned ordered_bits(float f) {
  unsigned b;
  memcpy(&b, &f, 4);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ inline float from_ordered(unsigned o) {
  const unsigned b = (o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

__global__ void score_keys_kernel(int n, const float* scores, float min_score, unsigned* keys, int* idx,
                                  int* valid_count) {
  int local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float s = scores[i];
    unsigned bits;
    memcpy(&bits, &s, 4);
    const bool ok = s >= min_score;  // NaN fails
    keys[i] = ok ? descending_score_key(s, bits) : kDeadKey;
    idx[i] = i;
    local += ok ? 1 : 0;
  }
  if (valid_count) {
    for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xFFFFFFFFu, local, o);
    if ((threadIdx.x & 31) == 0 && local) atomicAdd(valid_count, local);
  }
}

/// Group key per rank s (sign flipped so that int64 order = uint64 order); dead entries go last.
__global__ void group_keys_kernel(int m, const int* idx_s, const unsigned* key_s, const std::int64_t* groups,
                                  unsigned long long* gkey, int* s_val) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= m) return;
  const bool dead = key_s[s] == kDeadKey;
  gkey[s] = dead ? ~0ull : (static_cast<unsigned long long>(groups[idx_s[s]]) ^ 0x8000000000000000ull);
  s_val[s] = s;
}

/// head[p] = 1 where a new group starts (p-order). `gkey` may be null (one group).
__global__ void head_flags_kernel(int m, const unsigned long long* gkey, int* head, int* start_or_zero) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  const int h = (p == 0 || (gkey && gkey[p] != gkey[p - 1])) ? 1 : 0;
  head[p] = h;
  if (start_or_zero) start_or_zero[p] = h ? p : 0;
}

struct MaxOp {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

__global__ void top_k_flags_kernel(int m, const int* seg_start, long long k, unsigned char* flags) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  flags[p] = (p - seg_start[p]) < k ? 1 : 0;
}

/// Box preparation in p-order: geometry, pruning bounds, and whether the box can intersect anything.
template <bool kRot>
struct BoxOf;
template <>
struct BoxOf<false> {
  using type = AxisBox;
};
template <>
struct BoxOf<true> {
  using type = RotBox;
};

template <bool kRot>
__global__ void prepare_kernel(int m, const int* s_of_p, const int* idx_s, const unsigned* key_s,
                               const float* boxes, int offset, typename BoxOf<kRot>::type* prep, float4* bounds,
                               unsigned char* can, unsigned* extent) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;  // blockDim is a multiple of 32: whole warps reduce
  bool ok = false;
  float4 b = make_float4(0.f, 0.f, 0.f, 0.f);
  if (p < m) {
    const int s = s_of_p ? s_of_p[p] : p;
    const int i = idx_s[s];
    const bool dead = key_s[s] == kDeadKey;
    if constexpr (kRot) {
      const RotBox r = make_rot_box(boxes + static_cast<std::size_t>(i) * 5);
      prep[p] = r;
      b = make_float4(r.xmin, r.ymin, r.xmax, r.ymax);
      ok = r.valid != 0;
    } else {
      const float* q = boxes + static_cast<std::size_t>(i) * 4;
      prep[p] = make_axis_box(q, offset);
      b = make_float4(q[0], q[1], q[2], q[3]);
      ok = offset != 0 || (q[2] > q[0] && q[3] > q[1]);
    }
    ok = ok && !dead;
    bounds[p] = b;
    can[p] = ok ? 1 : 0;
  }
  if (extent) {  // one atomic per warp and bound, not per box (same-address atomics serialize)
    const unsigned x0 = s3d::detail::warp_reduce_min(ok ? ordered_bits(b.x) : 0xFFFFFFFFu);
    const unsigned y0 = s3d::detail::warp_reduce_min(ok ? ordered_bits(b.y) : 0xFFFFFFFFu);
    const unsigned x1 = s3d::detail::warp_reduce_max(ok ? ordered_bits(b.z) : 0u);
    const unsigned y1 = s3d::detail::warp_reduce_max(ok ? ordered_bits(b.w) : 0u);
    if ((threadIdx.x & 31) == 0 && x1 != 0u) {  // some box of the warp can overlap
      atomicMin(&extent[0], x0);
      atomicMin(&extent[1], y0);
      atomicMax(&extent[2], x1);
      atomicMax(&extent[3], y1);
    }
  }
}

__global__ void init_extent_kernel(unsigned* extent) {
  extent[0] = extent[1] = 0xFFFFFFFFu;
  extent[2] = extent[3] = 0u;
}

__global__ void extent_kernel(int m, const float4* bounds, const unsigned char* can, unsigned* extent) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m || !can[p]) return;
  const float4 b = bounds[p];
  atomicMin(&extent[0], ordered_bits(b.x));
  atomicMin(&extent[1], ordered_bits(b.y));
  atomicMax(&extent[2], ordered_bits(b.z));
  atomicMax(&extent[3], ordered_bits(b.w));
}

__device__ inline unsigned spread16(unsigned v) {
  v &= 0xFFFFu;
  v = (v | (v << 8)) & 0x00FF00FFu;
  v = (v | (v << 4)) & 0x0F0F0F0Fu;
  v = (v | (v << 2)) & 0x33333333u;
  v = (v | (v << 1)) & 0x55555555u;
  return v;
}

/// Spatial key per p: (group index << 32) | Morton(centre). Boxes that cannot overlap get Morton 0.
__global__ void morton_kernel(int m, const int* group_index, const float4* bounds, const unsigned char* can,
                              const unsigned* extent, unsigned long long* key, int* p_val) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  const float x0 = from_ordered(extent[0]), y0 = from_ordered(extent[1]);
  const float x1 = from_ordered(extent[2]), y1 = from_ordered(extent[3]);
  unsigned code = 0;
  if (can[p]) {
    const float4 b = bounds[p];
    const float cx = 0.5f * b.x + 0.5f * b.z, cy = 0.5f * b.y + 0.5f * b.w;
    const float sx = x1 > x0 ? 65535.f / (x1 - x0) : 0.f, sy = y1 > y0 ? 65535.f / (y1 - y0) : 0.f;
    const unsigned qx = static_cast<unsigned>(fminf(fmaxf((cx - x0) * sx, 0.f), 65535.f));
    const unsigned qy = static_cast<unsigned>(fminf(fmaxf((cy - y0) * sy, 0.f), 65535.f));
    code = spread16(qx) | (spread16(qy) << 1);
  }
  const unsigned long long g = group_index ? static_cast<unsigned long long>(group_index[p]) : 0ull;
  key[p] = (g << 32) | code;
  p_val[p] = p;
}

/// Gathers p-order data into q-order.
template <typename Box>
__global__ void gather_q_kernel(int m, const int* p_of_q, const Box* prep_p, const float4* bounds_p,
                                const unsigned char* can_p, const int* group_p, Box* prep_q, float4* bounds_q,
                                unsigned char* can_q, int* group_q, int* prio_q) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= m) return;
  const int p = p_of_q ? p_of_q[q] : q;  // null: q-order is the priority order (small problems)
  prio_q[q] = p;
  prep_q[q] = prep_p[p];
  bounds_q[q] = bounds_p[p];
  can_q[q] = can_p[p];
  group_q[q] = group_p ? group_p[p] : 0;
}

/// Per tile: union bounds of boxes that can overlap, and the tile range of its groups.
__global__ void tile_bounds_kernel(int m, int tiles, const float4* bounds_q, const unsigned char* can_q,
                                   const int* group_q, const int* group_start, const int* group_end,
                                   bool priority_order, float4* tile_box, int2* tile_range) {
  const int t = blockIdx.x;
  const int q = t * kTile + threadIdx.x;
  float4 b = make_float4(INFINITY, INFINITY, -INFINITY, -INFINITY);
  if (q < m && can_q[q]) b = bounds_q[q];
  for (int o = 16; o > 0; o >>= 1) {
    b.x = fminf(b.x, __shfl_down_sync(0xFFFFFFFFu, b.x, o));
    b.y = fminf(b.y, __shfl_down_sync(0xFFFFFFFFu, b.y, o));
    b.z = fmaxf(b.z, __shfl_down_sync(0xFFFFFFFFu, b.z, o));
    b.w = fmaxf(b.w, __shfl_down_sync(0xFFFFFFFFu, b.w, o));
  }
  __shared__ float4 part[2];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = b;
  __syncthreads();
  if (threadIdx.x == 0) {
    const float4 a = part[0], c = part[1];
    tile_box[t] = make_float4(fminf(a.x, c.x), fminf(a.y, c.y), fmaxf(a.z, c.z), fmaxf(a.w, c.w));
    const int first = t * kTile, last = min(m, first + kTile) - 1;
    const int g0 = group_q[first], g1 = group_q[last];
    // In priority order a box's suppressors rank higher, so they sit in this tile or an earlier one.
    const int hi = (group_end[g1] - 1) / kTile;
    tile_range[t] = make_int2(group_start[g0] / kTile, priority_order ? min(hi, t) : hi);
  }
}

__global__ void decrement_kernel(int m, int* v) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < m) v[p] -= 1;
}

__global__ void clamp_count_kernel(std::int64_t* count, long long limit) {
  if (*count > limit) *count = limit;
}

__global__ void init_state_kernel(int m, const unsigned char* can_q, unsigned char* state, unsigned* counters) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q < 3) counters[q] = 0;
  if (q < m) state[q] = can_q[q] ? 0 : 1;  // boxes that intersect nothing are kept (dead ones are dropped later)
}

__global__ void one_group_kernel(int m, int* group_start, int* group_end) {
  group_start[0] = 0;
  group_end[0] = m;
}

__global__ void group_bounds_kernel(int m, const int* head, const int* group_index, int* group_start,
                                    int* group_end) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  if (head[p]) {
    group_start[group_index[p]] = p;
    if (p > 0) group_end[group_index[p - 1]] = p;
  }
  if (p == m - 1) group_end[group_index[p]] = m;
}

__device__ inline bool tiles_overlap(float4 a, float4 b, float margin) {
  return a.z + margin >= b.x && b.z + margin >= a.x && a.w + margin >= b.y && b.w + margin >= a.y;
}

constexpr int kPairBlock = 128;
/// Up to this many boxes the mask is built in priority order (dense lower triangle of tiles): no spatial sort.
constexpr int kPriorityOrderMaxBoxes = 2048;
/// Up to this many tiles the mask is sized by its bound (tiles^2 pairs, <= 32 MiB) instead of by a count read
/// back from the device: no host synchronization in the call.
constexpr int kBoundedMaskMaxTiles = 256;

constexpr int kMortonSkipBits = 12;
constexpr int kSuper = 32;  // tiles per super-tile (two-level culling of tile pairs)

__global__ void super_bounds_kernel(int tiles, const float4* tile_box, float4* super_box) {
  const int c = blockIdx.x * kSuper + threadIdx.x;
  float4 b = c < tiles ? tile_box[c] : make_float4(INFINITY, INFINITY, -INFINITY, -INFINITY);
  for (int o = 16; o > 0; o >>= 1) {
    b.x = fminf(b.x, __shfl_down_sync(0xFFFFFFFFu, b.x, o));
    b.y = fminf(b.y, __shfl_down_sync(0xFFFFFFFFu, b.y, o));
    b.z = fmaxf(b.z, __shfl_down_sync(0xFFFFFFFFu, b.z, o));
    b.w = fmaxf(b.w, __shfl_down_sync(0xFFFFFFFFu, b.w, o));
  }
  if (threadIdx.x == 0) super_box[blockIdx.x] = b;
}

/// Candidate column tiles per row tile: count pass (offsets == nullptr) or fill pass. Super-tiles of 32
/// consecutive (spatially sorted) tiles are tested first, then their tiles.
__global__ void tile_pairs_kernel(int tiles, const float4* tile_box, const float4* super_box, const int2* tile_range,
                                  const unsigned* extent, int offset, const long long* offsets, long long* counts,
                                  int* pair_row, int* pair_col, bool direct) {
  using Scan = cub::BlockScan<int, kPairBlock>;
  using Reduce = cub::BlockReduce<int, kPairBlock>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } tmp;
  const float mag = fmaxf(fmaxf(fabsf(from_ordered(extent[0])), fabsf(from_ordered(extent[1]))),
                          fmaxf(fabsf(from_ordered(extent[2])), fabsf(from_ordered(extent[3]))));
  const float margin = prune_margin(offset, mag);
  for (int r = blockIdx.x; r < tiles; r += gridDim.x) {
    const float4 a = tile_box[r];
    const int2 range = tile_range[r];
    long long base = offsets ? offsets[r] : 0;
    long long count = 0;
    if (direct) {  // few tiles: one column tile per thread, no super-tile level (the same pairs, in c order)
      for (int cb = range.x; cb <= range.y; cb += kPairBlock) {
        const int c = cb + static_cast<int>(threadIdx.x);
        const int hit = (c <= range.y && tiles_overlap(a, tile_box[c], margin)) ? 1 : 0;
        if (!offsets) {
          const int total = Reduce(tmp.reduce).Sum(hit);
          if (threadIdx.x == 0) count += total;
        } else {
          int pos, total;
          Scan(tmp.scan).ExclusiveSum(hit, pos, total);
          if (hit) {
            pair_row[base + pos] = r;
            pair_col[base + pos] = c;
          }
          base += total;
        }
        __syncthreads();
      }
      if (!offsets && threadIdx.x == 0) counts[r] = count;
      continue;
    }
    const int s0 = range.x / kSuper, s1 = range.y / kSuper;
    for (int sb = s0; sb <= s1; sb += kPairBlock) {
      const int sidx = sb + threadIdx.x;
      unsigned hit = 0;
      if (sidx <= s1 && tiles_overlap(a, super_box[sidx], margin)) {
        for (int k = 0; k < kSuper; ++k) {
          const int c = sidx * kSuper + k;
          if (c >= range.x && c <= range.y && tiles_overlap(a, tile_box[c], margin)) hit |= 1u << k;
        }
      }
      const int hits = __popc(hit);
      if (!offsets) {
        const int total = Reduce(tmp.reduce).Sum(hits);
        if (threadIdx.x == 0) count += total;
      } else {
        int pos, total;
        Scan(tmp.scan).ExclusiveSum(hits, pos, total);
        long long w = base + pos;
        while (hit) {
          const int k = __ffs(hit) - 1;
          hit &= hit - 1;
          pair_row[w] = r;
          pair_col[w] = sidx * kSuper + k;
          ++w;
        }
        base += total;
      }
      __syncthreads();
    }
    if (!offsets && threadIdx.x == 0) counts[r] = count;
  }
  if (!offsets && blockIdx.x == 0 && threadIdx.x == 0) counts[tiles] = 0;  // the scan's total slot
}

/// Bit j of word (pair, t): box j of column tile ranks higher than row box i = r*64+t in the same group,
/// and IoU(j, i) passes. Boxes that cannot overlap have no bits.
template <bool kRot>
__global__ void mask_kernel(long long pairs, const long long* d_pairs, int m, const int* pair_row, const int* pair_col,
                            const typename BoxOf<kRot>::type* prep_q, const int* prio_q, const int* group_q,
                            const unsigned char* can_q, int offset, float thr, bool ge, unsigned long long* words) {
  using Box = typename BoxOf<kRot>::type;
  __shared__ Box sbox[kTile];
  __shared__ int sprio[kTile], sgroup[kTile];
  __shared__ unsigned char scan_ok[kTile];
  const int t = threadIdx.x;
  if (d_pairs) pairs = min(pairs, *d_pairs);  // capacity-bounded launch without a host sync
  for (long long pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
    const int r = pair_row[pair], c = pair_col[pair];
    const int j = c * kTile + t;
    if (j < m) {
      sbox[t] = prep_q[j];
      sprio[t] = prio_q[j];
      sgroup[t] = group_q[j];
      scan_ok[t] = can_q[j];
    } else {
      scan_ok[t] = 0;
    }
    __syncthreads();
    const int i = r * kTile + t;
    unsigned long long bits = 0;
    if (i < m && can_q[i]) {
      const Box mine = prep_q[i];
      const int pi = prio_q[i], gi = group_q[i];
      for (int k = 0; k < kTile; ++k) {
        if (!scan_ok[k] || sgroup[k] != gi || sprio[k] >= pi) continue;
        float iou;
        if constexpr (kRot) {
          iou = rot_iou(sbox[k], mine);
        } else {
          iou = axis_iou(sbox[k], mine, offset);
        }
        if (iou_passes(iou, thr, ge)) bits |= 1ull << k;
      }
    }
    words[pair * kTile + t] = bits;
    __syncthreads();
  }
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

/// Ends a round of the scan: adds the undecided boxes counted by each warp to the round's counter, clears the
/// next round's, and waits for the whole grid. True when no box is left undecided (`rounds_out` then holds the
/// number of rounds). Counters rotate over three slots so a slot is never cleared while still being read.
__device__ __forceinline__ bool round_settles_all(cg::grid_group& grid, unsigned* counters, int round,
                                                  unsigned undecided, int* rounds_out) {
  for (int o = 16; o > 0; o >>= 1) undecided += __shfl_down_sync(0xFFFFFFFFu, undecided, o);
  if ((threadIdx.x & 31) == 0 && undecided) atomicAdd(&counters[round % 3], undecided);
  if (grid.thread_rank() == 0) counters[(round + 1) % 3] = 0;
  grid.sync();
  if (static_cast<volatile unsigned*>(counters)[round % 3] != 0) return false;
  if (grid.thread_rank() == 0) *rounds_out = round + 1;
  return true;
}

/// All rounds of the parallel greedy scan in one cooperative kernel. state: 0 undecided, 1 kept, 2 removed.
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
constexpr int kWarpScanMaxBoxes = 16384;
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

/// kept flag by global rank s.
__global__ void kept_by_rank_kernel(int m, const int* p_of_q, const int* s_of_p, const unsigned* key_s,
                                    const unsigned char* state, unsigned char* flag_s) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= m) return;
  const int p = p_of_q[q];
  const int s = s_of_p ? s_of_p[p] : p;
  flag_s[s] = (state[q] == 1 && key_s[s] != kDeadKey) ? 1 : 0;
}

__global__ void finish_output_kernel(const int* count, const int* idx, const float* scores_in, std::int64_t* keep,
                                     float* scores_out, std::int64_t* count_out) {
  const int n = *count;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    const int i = idx[k];
    keep[k] = i;
    scores_out[k] = scores_in[i];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = n;
}

// ---- soft-NMS ----

constexpr int kSoftBlock = 1024;

/// One block per group runs mmcv's loop: select the live box with the highest current score (ties -> lower
/// input index), decay the others, drop those under the minimum. Each thread owns a fixed strided subset of
/// the group and caches the best key of its subset; only a selection that touches the subset (an overlapping
/// box, or the selected one) makes it rescan. Boxes whose bounds do not overlap the selected one have
/// inter = 0, weight exactly 1, and are skipped: exact. One __syncthreads per selection (double-buffered).
template <bool kRot>
__global__ void __launch_bounds__(kSoftBlock)
    soft_kernel(const int* group_start, const int* group_end, const typename BoxOf<kRot>::type* prep,
                const float4* bounds, const unsigned char* can, const int* s_of_p, const int* idx_s,
                const float* scores, int method, float thr, bool ge, float sigma, float min_score, int offset,
                float margin, float* cur, unsigned char* alive, int* idx_p, int* pos_of_idx,
                unsigned long long* out_key, float* out_score, int* total_selected, int small_max) {
  using Box = typename BoxOf<kRot>::type;
  const int g = blockIdx.x;
  const int b = group_start[g], e = group_end[g];
  if (e - b <= small_max) return;  // soft_small_kernel runs this group
  auto key_of = [&](int p) {
    const float sc = cur[p];
    unsigned bits;
    memcpy(&bits, &sc, 4);
    return (static_cast<unsigned long long>(descending_score_key(sc, bits)) << 32) | static_cast<unsigned>(idx_p[p]);
  };
  unsigned long long mine = ~0ull;
  for (int p = b + threadIdx.x; p < e; p += blockDim.x) {
    const int i = idx_s[s_of_p ? s_of_p[p] : p];
    const float sc = scores[i];
    idx_p[p] = i;
    pos_of_idx[i] = p;
    cur[p] = sc;
    const bool live = sc >= min_score;
    alive[p] = live ? 1 : 0;
    out_key[p] = ~0ull;
    if (live) {
      const unsigned long long k = key_of(p);
      mine = k < mine ? k : mine;
    }
  }
  __shared__ unsigned long long partial[2][kSoftBlock / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int selected = 0;
  for (int it = 0;; ++it) {
    unsigned long long v = mine;
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long other = __shfl_xor_sync(0xFFFFFFFFu, v, o);
      v = other < v ? other : v;
    }
    if (lane == 0) partial[it & 1][warp] = v;
    __syncthreads();
    v = lane < static_cast<int>(blockDim.x >> 5) ? partial[it & 1][lane] : ~0ull;
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long other = __shfl_xor_sync(0xFFFFFFFFu, v, o);
      v = other < v ? other : v;
    }
    const unsigned long long best = v;
    if (best == ~0ull) break;
    const int a = pos_of_idx[static_cast<int>(best & 0xFFFFFFFFull)];
    const bool owner = ((a - b) % static_cast<int>(blockDim.x)) == static_cast<int>(threadIdx.x);
    bool changed = owner;
    if (owner) {
      out_key[b + selected] = best;
      out_score[b + selected] = cur[a];
      alive[a] = 0;
    }
    ++selected;
    if (can[a]) {
      const Box box_a = prep[a];
      const float4 ba = bounds[a];
      for (int p = b + threadIdx.x; p < e; p += blockDim.x) {
        if (!alive[p] || !can[p]) continue;
        const float4 bp = bounds[p];
        if (!(ba.z + margin >= bp.x && bp.z + margin >= ba.x && ba.w + margin >= bp.y && bp.w + margin >= ba.y))
          continue;  // no intersection possible: weight 1
        float iou;
        if constexpr (kRot) {
          iou = rot_iou(box_a, prep[p]);
        } else {
          iou = axis_iou(box_a, prep[p], offset);
        }
        const float sc = cur[p] * soft_weight(iou, method, thr, ge, sigma);
        cur[p] = sc;
        if (sc < min_score) alive[p] = 0;
        changed = true;
      }
    }
    if (changed) {
      mine = ~0ull;
      for (int p = b + threadIdx.x; p < e; p += blockDim.x) {
        if (!alive[p]) continue;
        const unsigned long long k = key_of(p);
        mine = k < mine ? k : mine;
      }
    }
  }
  if (threadIdx.x == 0) atomicAdd(total_selected, selected);
}

constexpr int kSoftSmallThreads = 1024;
constexpr int kSoftSlots = 11;
/// Groups up to this size run in soft_small_kernel: each box's bounds and input index live in shared memory
/// (20 bytes a box, 220 KiB at most) and its current score in a register of the thread that owns it.
constexpr int kSoftSmallMax = kSoftSmallThreads * kSoftSlots;
constexpr unsigned kCanBit = 0x80000000u;

/// soft_kernel for one group of at most kSoftSmallMax boxes, same decisions in the same order (mmcv's loop):
/// thread t owns the group's boxes t, t + 1024, ... (slots); the argmax carries the winner's position, so a
/// selection costs one block-wide reduction, one __syncthreads and a pass over the owned slots in registers.
/// Every box's score is decayed by the selected boxes in selection order, with the same float operations as
/// the CPU backend: bit-identical.
template <bool kRot>
__global__ void __launch_bounds__(kSoftSmallThreads, 1)
    soft_small_kernel(const int* group_start, const int* group_end, const typename BoxOf<kRot>::type* prep,
                      const float4* bounds, const unsigned char* can, const int* s_of_p, const int* idx_s,
                      const float* scores, int method, float thr, bool ge, float sigma, float min_score, int offset,
                      float margin, unsigned long long* out_key, float* out_score, int* total_selected,
                      int small_max, int smem_boxes) {
  using Box = typename BoxOf<kRot>::type;
  extern __shared__ float4 soft_smem[];
  float4* sb = soft_smem;                                         // bounds by position in the group
  unsigned* sidx = reinterpret_cast<unsigned*>(sb + smem_boxes);  // input index | kCanBit
  const int g = blockIdx.x;
  const int b = group_start[g], e = group_end[g];
  const int len = e - b;
  if (len > small_max) return;  // soft_kernel runs this group
  const int t = threadIdx.x;
  float cur[kSoftSlots];
  unsigned live = 0;
#pragma unroll
  for (int k = 0; k < kSoftSlots; ++k) {
    const int l = t + k * kSoftSmallThreads;
    cur[k] = 0.f;
    if (l < len) {
      const int p = b + l;
      const int i = idx_s[s_of_p ? s_of_p[p] : p];
      const float sc = scores[i];
      cur[k] = sc;
      sb[l] = bounds[p];
      sidx[l] = static_cast<unsigned>(i) | (can[p] ? kCanBit : 0u);
      out_key[p] = ~0ull;
      if (sc >= min_score) live |= 1u << k;
    }
  }
  unsigned long long mine = ~0ull;
  int mine_l = -1;
  auto rescan = [&]() {
    mine = ~0ull;
    mine_l = -1;
#pragma unroll
    for (int k = 0; k < kSoftSlots; ++k) {
      if (live & (1u << k)) {
        const int l = t + k * kSoftSmallThreads;
        unsigned bits;
        memcpy(&bits, &cur[k], 4);
        const unsigned long long key = (static_cast<unsigned long long>(descending_score_key(cur[k], bits)) << 32) |
                                       (sidx[l] & ~kCanBit);
        if (key < mine) {
          mine = key;
          mine_l = l;
        }
      }
    }
  };
  rescan();
  __shared__ unsigned long long part_key[2][kSoftSmallThreads / 32];
  __shared__ int part_pos[2][kSoftSmallThreads / 32];
  const int lane = t & 31, warp = t >> 5;
  int selected = 0;
  for (int it = 0;; ++it) {
    unsigned long long v = mine;
    int vl = mine_l;
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long ov = __shfl_xor_sync(0xFFFFFFFFu, v, o);
      const int ol = __shfl_xor_sync(0xFFFFFFFFu, vl, o);
      if (ov < v) {
        v = ov;
        vl = ol;
      }
    }
    if (lane == 0) {
      part_key[it & 1][warp] = v;
      part_pos[it & 1][warp] = vl;
    }
    __syncthreads();
    v = part_key[it & 1][lane];  // kSoftSmallThreads / 32 == 32 partials
    vl = part_pos[it & 1][lane];
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long ov = __shfl_xor_sync(0xFFFFFFFFu, v, o);
      const int ol = __shfl_xor_sync(0xFFFFFFFFu, vl, o);
      if (ov < v) {
        v = ov;
        vl = ol;
      }
    }
    if (v == ~0ull) break;
    const int la = vl;
    const bool owner = (la % kSoftSmallThreads) == t;
    bool changed = owner;
    if (owner) {
      const int ka = la / kSoftSmallThreads;
#pragma unroll
      for (int k = 0; k < kSoftSlots; ++k) {
        if (k == ka) {
          out_key[b + selected] = v;
          out_score[b + selected] = cur[k];
          live &= ~(1u << k);
        }
      }
    }
    ++selected;
    if (sidx[la] & kCanBit) {
      const float4 ba = sb[la];
      Box box_a;
      if constexpr (kRot) {
        box_a = prep[b + la];
      } else {
        const float q[4] = {ba.x, ba.y, ba.z, ba.w};
        box_a = make_axis_box(q, offset);  // the same floats and formula as prepare_kernel: identical box
      }
#pragma unroll
      for (int k = 0; k < kSoftSlots; ++k) {
        if (!(live & (1u << k))) continue;
        const int l = t + k * kSoftSmallThreads;
        if (!(sidx[l] & kCanBit)) continue;
        const float4 bp = sb[l];
        if (!(ba.z + margin >= bp.x && bp.z + margin >= ba.x && ba.w + margin >= bp.y && bp.w + margin >= ba.y))
          continue;  // no intersection possible: weight 1
        float iou;
        if constexpr (kRot) {
          iou = rot_iou(box_a, prep[b + l]);
        } else {
          const float q[4] = {bp.x, bp.y, bp.z, bp.w};
          iou = axis_iou(box_a, make_axis_box(q, offset), offset);
        }
        const float sc = cur[k] * soft_weight(iou, method, thr, ge, sigma);
        cur[k] = sc;
        if (sc < min_score) live &= ~(1u << k);
        changed = true;
      }
    }
    if (changed) rescan();
  }
  if (t == 0) atomicAdd(total_selected, selected);
}

__global__ void finish_soft_kernel(const int* count, const unsigned long long* keys, const float* scores_in,
                                   std::int64_t* keep, float* scores_out, std::int64_t* count_out) {
  const int n = *count;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    keep[k] = static_cast<std::int64_t>(keys[k] & 0xFFFFFFFFull);
    scores_out[k] = scores_in[k];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = n;
}

// ---- max_dets ----

__global__ void image_keys_kernel(int k, const std::int64_t* keep, const std::int64_t* images,
                                  unsigned long long* key, int* pos) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= k) return;
  key[t] = images ? static_cast<unsigned long long>(images[keep[t]]) ^ 0x8000000000000000ull : 0ull;
  pos[t] = t;
}

__global__ void rank_in_image_kernel(int k, const int* seg_start, const int* pos, long long max_dets,
                                     unsigned char* flag) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= k) return;
  flag[pos[t]] = (t - seg_start[t]) < max_dets ? 1 : 0;
}

__global__ void gather_selected_kernel(const int* count, const int* sel, const std::int64_t* keep_in,
                                       const float* score_in, std::int64_t* keep_out, float* score_out,
                                       std::int64_t* count_out) {
  const int n = *count;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    keep_out[k] = keep_in[sel[k]];
    score_out[k] = score_in[sel[k]];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = n;
}

unsigned blocks(std::size_t n, unsigned block = 256) { return std::max(1u, ::s3d::detail::grid_size(n, block)); }

int bit_length(unsigned long long v) {
  int b = 0;
  while (v) {
    ++b;
    v >>= 1;
  }
  return b;
}

// ---- fused small-N hard NMS (axis-aligned, n <= kFusedMaxBoxes): three kernels, no host sync ----
//  1. fused_sort_kernel (one block): stable block radix sort of the 32-bit descending score keys, values = input
//     index (blocked load order = index order, so ties keep the lower index first); dead scores sort last and
//     `m` counts the live ones. The boxes stay in global rank order (groups are checked per pair: the greedy
//     decisions of independent groups do not interact, so no group-major order is needed).
//  2. fused_mask_kernel: one 64-thread block per (row tile r, column tile c <= r) of the dense lower triangle;
//     row box i gets the bits of the higher-ranked boxes of tile c of its group whose IoU with it passes. Only
//     non-zero words are stored, appended to the row box's list (column, word) by an atomic counter.
//  3. fused_scan_kernel (one block): greedy NMS by parallel rounds over the lists with block barriers (a box is
//     removed once a suppressor is kept, kept once all are removed), then the compaction to the output.
//     (A first version resolved 64-box tiles in order, one warp per tile, waiting on shared-memory flags: the
//     polling atomics made it 2-3x slower than the rounds on clustered inputs, H200.)
constexpr int kFusedMaxBoxes = 16384;  // capacity of the fused kernels (shared-memory bitmaps, sort sizes)
/// Default limit of the fused path. H200, graph replay, fused vs the round-based path: 1k boxes 0.079 / 0.080 ms
/// (clustered IoU 0.5), 0.061 / 0.077 (0.7), uniform 0.038 / 0.066, 0.032 / 0.062; at 10k it wins only when
/// few boxes suppress each other (80 classes 0.168 / 0.261 ms, uniform 0.21 / 0.21) and loses on clustered
/// boxes (0.52 / 0.25 ms: the dense mask and the list-walking rounds), so it is on up to 1024 boxes.
/// S3D_NMS_FUSED_MAX_BOXES=N (0..16384) overrides it (benchmarks, tests).
constexpr int kFusedDefaultMaxBoxes = 1024;
constexpr int kFusedMaxTiles = kFusedMaxBoxes / kTile;
constexpr int kFusedScanThreads = 1024;
constexpr int kFusedBatch = 8;  // boxes per thread whose lists are walked together in a scan round

template <int kThreads, int kItems>
struct FusedSort {
  using Sort = cub::BlockRadixSort<unsigned, kThreads, kItems, int>;
  static constexpr std::size_t kSmem = sizeof(typename Sort::TempStorage);
};

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads, 1)
    fused_sort_kernel(int n, const float* scores, float min_score, int* order, int* m_out, int* list_count) {
  using Sort = typename FusedSort<kThreads, kItems>::Sort;
  extern __shared__ __align__(16) unsigned char fused_smem[];
  __shared__ int live;
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
  // block -> (r, c), c <= r, of the lower triangle
  const long long b = blockIdx.x;
  int r = static_cast<int>((sqrt(8.0 * static_cast<double>(b) + 1.0) - 1.0) * 0.5);
  while (static_cast<long long>(r) * (r + 1) / 2 > b) --r;
  while (static_cast<long long>(r + 1) * (r + 2) / 2 <= b) ++r;
  const int c = static_cast<int>(b - static_cast<long long>(r) * (r + 1) / 2);
  const int m = *m_ptr;
  if (r * kTile >= m) return;  // uniform over the block
  __shared__ AxisBox sbox[kTile];
  __shared__ std::int64_t sgroup[kTile];
  __shared__ unsigned char sok[kTile];
  const int t = threadIdx.x;
  const int j = c * kTile + t;
  sok[t] = 0;
  if (j < m) {
    const float* q = boxes + static_cast<std::size_t>(order[j]) * 4;
    sbox[t] = make_axis_box(q, offset);
    sgroup[t] = groups ? groups[order[j]] : 0;
    sok[t] = (offset != 0 || (q[2] > q[0] && q[3] > q[1])) ? 1 : 0;
  }
  __syncthreads();
  const int i = r * kTile + t;
  if (i >= m) return;
  const float* q = boxes + static_cast<std::size_t>(order[i]) * 4;
  if (!(offset != 0 || (q[2] > q[0] && q[3] > q[1]))) return;  // cannot overlap anything: no bits
  const AxisBox mine = make_axis_box(q, offset);
  const std::int64_t gi = groups ? groups[order[i]] : 0;
  const int kend = c == r ? t : kTile;  // only higher-ranked boxes
  unsigned long long bits = 0;
  for (int k = 0; k < kend; ++k) {
    if (!sok[k] || sgroup[k] != gi) continue;
    const AxisBox& o = sbox[k];
    // Same formula as axis_iou; inter == 0 gives IoU 0, -0 or NaN, which never passes (thr >= 0, and > 0 with
    // `ge`): the division is skipped then, the decision is the same. Without the +1 offset, inter > 0 needs
    // min(x2) > max(x1) and min(y2) > max(y1) (a difference of distinct floats is never 0: no FTZ here).
    const float xx1 = max_f(o.x1, mine.x1), yy1 = max_f(o.y1, mine.y1);
    const float xx2 = min_f(o.x2, mine.x2), yy2 = min_f(o.y2, mine.y2);
    if (offset == 0) {
      if (!(xx2 > xx1 && yy2 > yy1)) continue;
    } else {
      const float off = static_cast<float>(offset);
      if (max_f(0.f, xx2 - xx1 + off) * max_f(0.f, yy2 - yy1 + off) == 0.f) continue;
    }
    if (iou_passes(axis_iou(o, mine, offset), thr, ge)) bits |= 1ull << k;
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
                      const unsigned long long* list_word, const int* order, const float* scores_in,
                      long long max_dets, std::int64_t* keep, float* scores_out, std::int64_t* count_out) {
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
            const std::size_t idx =
                static_cast<std::size_t>(threadIdx.x + (s0 + b) * kFusedScanThreads) * cap + e;
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

struct NmsCuda::State {
  int device = 0;
  int sm_count = 0;
  // host-path staging
  DeviceBuffer<float> in_boxes, in_scores;
  DeviceBuffer<std::int64_t> in_groups, in_images;
  // ranking
  DeviceBuffer<unsigned> key_a, key_b;
  DeviceBuffer<int> idx_a, idx_s;  // idx_s[s] = input index of rank s
  DeviceBuffer<unsigned long long> gkey_a, gkey_p;
  DeviceBuffer<int> sval_a, s_of_p;
  DeviceBuffer<int> head, seg_start, group_index, group_start, group_end, scratch_int;
  DeviceBuffer<unsigned char> flags;
  // geometry
  DeviceBuffer<AxisBox> axis_p, axis_q;
  DeviceBuffer<RotBox> rot_p, rot_q;
  DeviceBuffer<float4> bounds_p, bounds_q;
  DeviceBuffer<unsigned char> can_p, can_q;
  DeviceBuffer<int> group_q, p_of_q, p_val;
  DeviceBuffer<unsigned long long> skey_a, skey_b;
  DeviceBuffer<unsigned> extent;
  // sparse mask and scan
  DeviceBuffer<float4> tile_box, super_box;
  DeviceBuffer<int2> tile_range;
  DeviceBuffer<long long> pair_counts, pair_offsets;
  DeviceBuffer<int> pair_row, pair_col;
  DeviceBuffer<unsigned long long> words;
  DeviceBuffer<unsigned char> state;
  DeviceBuffer<unsigned> counters;
  DeviceBuffer<int> rounds, count_int;
  // soft
  DeviceBuffer<float> cur, soft_score, soft_score_b;
  DeviceBuffer<unsigned long long> soft_key, soft_key_b;
  DeviceBuffer<int> soft_idx, soft_pos;
  // output
  DeviceBuffer<std::int64_t> keep, keep_b, count;
  DeviceBuffer<float> out_scores, out_scores_b;
  DeviceBuffer<unsigned char> temp;
  // fused small-N path
  DeviceBuffer<int> fused_order, fused_m, list_count;
  DeviceBuffer<unsigned short> list_col;
  DeviceBuffer<unsigned long long> list_word;
  int fused_max_boxes = kFusedDefaultMaxBoxes;  // S3D_NMS_FUSED_MAX_BOXES overrides (benchmarks, tests)
  // pinned host scratch
  long long* host = nullptr;
  NmsEngine::Stats stats;
  bool use_sop = false;  // s_of_p holds the p -> s map (else p == s)
  int last_tiles = 0;
  // soft_small_kernel: boxes whose shared-memory state fits a block on this device, and the dynamic shared
  // memory size already allowed per instantiation (axis, rotated)
  int soft_smem_boxes_max = 0;
  std::size_t soft_smem_attr[2] = {0, 0};

  // CUDA graph of the last sync-free call (see run_device): replayed while the same call repeats.
  struct GraphKey {
    const void* boxes = nullptr;
    const void* scores = nullptr;
    const void* groups = nullptr;
    const void* images = nullptr;
    std::int64_t count = -1;
    StreamHandle stream = nullptr;
    NmsParams params;
    bool operator==(const GraphKey& o) const {
      const NmsParams &a = params, &b = o.params;
      return boxes == o.boxes && scores == o.scores && groups == o.groups && images == o.images &&
             count == o.count && stream == o.stream && a.iou_threshold == b.iou_threshold &&
             a.suppress_at_equal == b.suppress_at_equal && a.pixel_offset == b.pixel_offset &&
             a.method == b.method && a.sigma == b.sigma && a.soft_min_score == b.soft_min_score &&
             a.min_score == b.min_score && a.pre_top_k == b.pre_top_k && a.max_dets == b.max_dets &&
             a.rotated == b.rotated;
    }
  };
  cudaGraphExec_t graph_exec = nullptr;
  GraphKey graph_key, seen_key;
  bool seen = false;            // the last call was an eager run of seen_key (its buffers are sized)
  bool graphs_disabled = false;  // a capture failed once on this engine: run eagerly from then on
  NmsEngine::Stats graph_stats;
  int graph_last_tiles = 0;

  void drop_graph() {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    graph_exec = nullptr;
  }
  void run_device(const NmsInput& in, const NmsParams& prm, StreamHandle st);

  explicit State(int dev) : device(dev) {
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, dev));
    int optin = 0;
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    soft_smem_boxes_max = std::max(0, (optin - 2048) / static_cast<int>(sizeof(float4) + sizeof(unsigned)));
    S3D_CUDA_CHECK(cudaMallocHost(&host, 8 * sizeof(long long)));
    if (const char* env = std::getenv("S3D_NMS_FUSED_MAX_BOXES"))
      fused_max_boxes = std::min(kFusedMaxBoxes, std::max(0, std::atoi(env)));
    S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_sort_kernel<256, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(FusedSort<256, 4>::kSmem)));
    S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_sort_kernel<512, 8>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(FusedSort<512, 8>::kSmem)));
    S3D_CUDA_CHECK(cudaFuncSetAttribute(fused_sort_kernel<1024, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(FusedSort<1024, 16>::kSmem)));
  }
  ~State() {
    drop_graph();
    if (host) cudaFreeHost(host);
  }

  template <typename F>
  void cub_call(F&& f, StreamHandle stream) {
    std::size_t bytes = 0;
    S3D_CUDA_CHECK(f(static_cast<void*>(nullptr), bytes));
    temp.resize(std::max<std::size_t>(bytes, 1), stream);
    S3D_CUDA_CHECK(f(static_cast<void*>(temp.data()), bytes));
  }

  long long read_int(const int* d_value, StreamHandle stream) {
    int v = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(host, d_value, sizeof(int), cudaMemcpyDeviceToHost, stream));
    S3D_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memcpy(&v, host, sizeof(int));
    return v;
  }
  long long read_ll(const long long* d_value, StreamHandle stream) {
    S3D_CUDA_CHECK(cudaMemcpyAsync(host, d_value, sizeof(long long), cudaMemcpyDeviceToHost, stream));
    S3D_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host[0];
  }

  void set_count_zero(StreamHandle stream) {
    count.resize(1, stream);
    S3D_CUDA_CHECK(cudaMemsetAsync(count.data(), 0, sizeof(std::int64_t), stream));
  }

  void run(const NmsInput& in, const NmsParams& prm, StreamHandle st);
  /// Hard axis-aligned NMS without pre_top_k, up to fused_max_boxes boxes: the three fused kernels.
  bool fused_applies(const NmsInput& in, const NmsParams& prm) const {
    return prm.method == NmsMethod::kHard && !prm.rotated && in.count > 0 && in.count <= fused_max_boxes &&
           (prm.pre_top_k == 0 || prm.pre_top_k >= in.count);
  }
  void run_fused(const NmsInput& in, const NmsParams& prm, StreamHandle st);
  template <bool kRot>
  void run_hard(const NmsInput& in, const NmsParams& prm, int m, bool grouped, StreamHandle st);
  template <bool kRot>
  void run_soft(const NmsInput& in, const NmsParams& prm, int m, bool grouped, StreamHandle st);
  void apply_max_dets(const NmsInput& in, const NmsParams& prm, StreamHandle st);

  /// max |coordinate| of the prepared boxes' bounds (for the pixel_offset pruning margin; synchronizes).
  float max_abs_coordinate(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
    (void)in;
    (void)prm;
    extent.resize(4, st);
    init_extent_kernel<<<1, 1, 0, st>>>(extent.data());
    S3D_CUDA_CHECK_LAUNCH();
    const int m = static_cast<int>(stats.boxes);
    extent_kernel<<<blocks(m), 256, 0, st>>>(m, bounds_p.data(), can_p.data(), extent.data());
    S3D_CUDA_CHECK_LAUNCH();
    unsigned h[4];
    S3D_CUDA_CHECK(cudaMemcpyAsync(h, extent.data(), sizeof h, cudaMemcpyDeviceToHost, st));
    S3D_CUDA_CHECK(cudaStreamSynchronize(st));
    float mag = 0.f;
    for (unsigned o : h) {
      const unsigned bits = (o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o;
      float f;
      std::memcpy(&f, &bits, 4);
      mag = std::max(mag, std::fabs(f));
    }
    return mag;
  }
};

void NmsCuda::State::run(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
  stats = {};
  stats.rounds = -1;
  last_tiles = 0;
  const int n = static_cast<int>(in.count);
  set_count_zero(st);
  keep.resize(std::max(n, 1), st);
  out_scores.resize(std::max(n, 1), st);
  if (n == 0) return;
  if (fused_applies(in, prm)) {
    run_fused(in, prm, st);
    if (prm.max_dets > 0 && in.image_ids) apply_max_dets(in, prm, st);
    return;
  }

  // 1. Rank by score (stable, descending); dead (NaN, below min_score) last.
  key_a.resize(n, st);
  key_b.resize(n, st);
  idx_a.resize(n, st);
  idx_s.resize(n, st);
  count_int.resize(2, st);
  const bool filtering = prm.min_score > -INFINITY;
  if (filtering) S3D_CUDA_CHECK(cudaMemsetAsync(count_int.data(), 0, sizeof(int), st));
  score_keys_kernel<<<blocks(n), 256, 0, st>>>(n, in.scores, prm.min_score, key_a.data(), idx_a.data(),
                                                filtering ? count_int.data() : nullptr);
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, key_a.data(), key_b.data(), idx_a.data(), idx_s.data(), n, 0, 32, st);
  }, st);
  int m = n;
  if (filtering) m = static_cast<int>(read_int(count_int.data(), st));
  if (m == 0) return;

  // 2. Group-major order p (stable by group over the ranked list).
  const bool grouped = in.group_ids != nullptr;
  if (grouped) {
    gkey_a.resize(m, st);
    gkey_p.resize(m, st);
    sval_a.resize(m, st);
    s_of_p.resize(m, st);
    group_keys_kernel<<<blocks(m), 256, 0, st>>>(m, idx_s.data(), key_b.data(), in.group_ids, gkey_a.data(),
                                                  sval_a.data());
    S3D_CUDA_CHECK_LAUNCH();
    cub_call([&](void* t, std::size_t& b) {
      return cub::DeviceRadixSort::SortPairs(t, b, gkey_a.data(), gkey_p.data(), sval_a.data(), s_of_p.data(), m, 0,
                                             64, st);
    }, st);
  }
  // 3. pre_top_k per group: compact p-order to the first k of each group.
  if (prm.pre_top_k > 0 && prm.pre_top_k < m) {
    head.resize(m, st);
    seg_start.resize(m, st);
    scratch_int.resize(m, st);
    flags.resize(m, st);
    head_flags_kernel<<<blocks(m), 256, 0, st>>>(m, grouped ? gkey_p.data() : nullptr, head.data(), scratch_int.data());
    S3D_CUDA_CHECK_LAUNCH();
    cub_call([&](void* t, std::size_t& b) {
      return cub::DeviceScan::InclusiveScan(t, b, scratch_int.data(), seg_start.data(), MaxOp(), m, st);
    }, st);
    top_k_flags_kernel<<<blocks(m), 256, 0, st>>>(m, seg_start.data(), prm.pre_top_k, flags.data());
    S3D_CUDA_CHECK_LAUNCH();
    // p -> s values, compacted (identity p -> s when ungrouped)
    if (!grouped) {
      s_of_p.resize(m, st);
      sval_a.resize(m, st);
      cub_call([&](void* t, std::size_t& b) {
        return cub::DeviceSelect::Flagged(t, b, thrust::counting_iterator<int>(0), flags.data(), s_of_p.data(),
                                          count_int.data(), m, st);
      }, st);
    } else {
      sval_a.resize(m, st);
      gkey_a.resize(m, st);
      cub_call([&](void* t, std::size_t& b) {
        return cub::DeviceSelect::Flagged(t, b, s_of_p.data(), flags.data(), sval_a.data(), count_int.data(), m, st);
      }, st);
      cub_call([&](void* t, std::size_t& b) {
        return cub::DeviceSelect::Flagged(t, b, gkey_p.data(), flags.data(), gkey_a.data(), count_int.data() + 1, m,
                                          st);
      }, st);
      std::swap(sval_a, s_of_p);
      std::swap(gkey_a, gkey_p);
    }
    m = static_cast<int>(read_int(count_int.data(), st));
    if (m == 0) return;
    use_sop = true;
  } else {
    use_sop = grouped;
  }
  stats.boxes = m;
  if (prm.method == NmsMethod::kHard) {
    if (prm.rotated) {
      run_hard<true>(in, prm, m, grouped, st);
    } else {
      run_hard<false>(in, prm, m, grouped, st);
    }
  } else {
    if (prm.rotated) {
      run_soft<true>(in, prm, m, grouped, st);
    } else {
      run_soft<false>(in, prm, m, grouped, st);
    }
  }
  if (prm.max_dets > 0) apply_max_dets(in, prm, st);
}

}  // namespace s3d::detection::detail

namespace s3d::detection::detail {

template <bool kRot>
void NmsCuda::State::run_hard(const NmsInput& in, const NmsParams& prm, int m, bool grouped, StreamHandle st) {
  using Box = typename BoxOf<kRot>::type;
  DeviceBuffer<Box>& prep_p_buf = [&]() -> DeviceBuffer<Box>& {
    if constexpr (kRot) return rot_p; else return axis_p;
  }();
  DeviceBuffer<Box>& prep_q_buf = [&]() -> DeviceBuffer<Box>& {
    if constexpr (kRot) return rot_q; else return axis_q;
  }();
  const int* sop = use_sop ? s_of_p.data() : nullptr;
  prep_p_buf.resize(m, st);
  prep_q_buf.resize(m, st);
  bounds_p.resize(m, st);
  bounds_q.resize(m, st);
  can_p.resize(m, st);
  can_q.resize(m, st);
  extent.resize(4, st);
  init_extent_kernel<<<1, 1, 0, st>>>(extent.data());
  S3D_CUDA_CHECK_LAUNCH();
  prepare_kernel<kRot><<<blocks(m), 256, 0, st>>>(m, sop, idx_s.data(), key_b.data(), in.boxes, prm.pixel_offset,
                                                   prep_p_buf.data(), bounds_p.data(), can_p.data(), extent.data());
  S3D_CUDA_CHECK_LAUNCH();

  // Groups: index per p and [start, end) per group (same ranges in p- and q-order).
  group_index.resize(m, st);
  group_start.resize(m, st);
  group_end.resize(m, st);
  if (grouped) {
    head.resize(m, st);
    head_flags_kernel<<<blocks(m), 256, 0, st>>>(m, gkey_p.data(), head.data(), nullptr);
    S3D_CUDA_CHECK_LAUNCH();
    cub_call([&](void* t, std::size_t& b) {
      return cub::DeviceScan::InclusiveSum(t, b, head.data(), group_index.data(), m, st);
    }, st);
    decrement_kernel<<<blocks(m), 256, 0, st>>>(m, group_index.data());
    S3D_CUDA_CHECK_LAUNCH();
    group_bounds_kernel<<<blocks(m), 256, 0, st>>>(m, head.data(), group_index.data(), group_start.data(),
                                                    group_end.data());
    S3D_CUDA_CHECK_LAUNCH();
  } else {
    one_group_kernel<<<1, 1, 0, st>>>(m, group_start.data(), group_end.data());
    S3D_CUDA_CHECK_LAUNCH();
  }

  // Spatial order q within each group. Small problems stay in priority order (q = p): then the dense lower
  // triangle of tiles is small enough to bound the mask without asking the device how many pairs it has.
  const bool spatial = m > kPriorityOrderMaxBoxes;
  p_val.resize(m, st);  // prio_q
  group_q.resize(m, st);
  if (spatial) {
    skey_a.resize(m, st);
    skey_b.resize(m, st);
    p_of_q.resize(m, st);
    morton_kernel<<<blocks(m), 256, 0, st>>>(m, grouped ? group_index.data() : nullptr, bounds_p.data(),
                                              can_p.data(), extent.data(), skey_a.data(), p_val.data());
    S3D_CUDA_CHECK_LAUNCH();
    const int end_bit = grouped ? 32 + bit_length(static_cast<unsigned long long>(m)) : 32;
    // Small problems leave the low 12 Morton bits (cells of 1/1024 of the extent) unsorted: the order only
    // shapes the tiles (culling), never a decision, and one radix pass less is a launch less. Large ones sort
    // them all, as before (1M clustered measured 6.3 -> 6.8 ms with the skip; the cause is not isolated).
    const int begin_bit = m <= kWarpScanMaxBoxes ? kMortonSkipBits : 0;
    cub_call([&](void* t, std::size_t& b) {
      return cub::DeviceRadixSort::SortPairs(t, b, skey_a.data(), skey_b.data(), p_val.data(), p_of_q.data(), m,
                                             begin_bit, end_bit, st);
    }, st);
  }
  gather_q_kernel<Box><<<blocks(m), 256, 0, st>>>(m, spatial ? p_of_q.data() : nullptr, prep_p_buf.data(),
                                                   bounds_p.data(), can_p.data(),
                                                   grouped ? group_index.data() : nullptr,
                                                   prep_q_buf.data(), bounds_q.data(), can_q.data(), group_q.data(),
                                                   p_val.data());
  S3D_CUDA_CHECK_LAUNCH();
  const int* prio_q = p_val.data();

  // Tiles and candidate tile pairs.
  const int tiles = (m + kTile - 1) / kTile;
  tile_box.resize(tiles, st);
  tile_range.resize(tiles, st);
  tile_bounds_kernel<<<tiles, kTile, 0, st>>>(m, tiles, bounds_q.data(), can_q.data(), group_q.data(),
                                              group_start.data(), group_end.data(), !spatial, tile_box.data(),
                                              tile_range.data());
  S3D_CUDA_CHECK_LAUNCH();
  pair_counts.resize(tiles + 1, st);
  pair_offsets.resize(tiles + 1, st);
  const int supers = (tiles + kSuper - 1) / kSuper;
  super_box.resize(supers, st);
  const bool direct = tiles <= kBoundedMaskMaxTiles;  // few tiles: test each tile pair directly
  if (!direct) {
    super_bounds_kernel<<<supers, kSuper, 0, st>>>(tiles, tile_box.data(), super_box.data());
    S3D_CUDA_CHECK_LAUNCH();
  }
  const unsigned pair_grid = static_cast<unsigned>(std::min(tiles, sm_count * 16));
  tile_pairs_kernel<<<pair_grid, kPairBlock, 0, st>>>(tiles, tile_box.data(), super_box.data(), tile_range.data(),
                                                      extent.data(),
                                                      prm.pixel_offset, nullptr, pair_counts.data(), nullptr, nullptr,
                                                      direct);
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceScan::ExclusiveSum(t, b, pair_counts.data(), pair_offsets.data(), tiles + 1, st);
  }, st);
  // Large problems: one sync to size the mask. Small ones: the pair count is bounded (all tile pairs, or the
  // lower triangle in priority order) and the kernels read the real count on the device.
  const bool bounded = tiles <= kBoundedMaskMaxTiles;
  const long long pairs = !bounded ? read_ll(pair_offsets.data() + tiles, st)
                          : spatial ? static_cast<long long>(tiles) * tiles
                                    : static_cast<long long>(tiles) * (tiles + 1) / 2;
  stats.tile_pairs = pairs;  // priority-order mode: the bound; stats() reads the real count back
  pair_row.resize(static_cast<std::size_t>(pairs), st);
  pair_col.resize(static_cast<std::size_t>(pairs), st);
  words.resize(static_cast<std::size_t>(pairs) * kTile, st);
  tile_pairs_kernel<<<pair_grid, kPairBlock, 0, st>>>(tiles, tile_box.data(), super_box.data(), tile_range.data(),
                                                      extent.data(), prm.pixel_offset, pair_offsets.data(), nullptr, pair_row.data(),
                                                      pair_col.data(), direct);
  S3D_CUDA_CHECK_LAUNCH();
  const unsigned mask_grid = static_cast<unsigned>(std::min<long long>(pairs, 1ll << 24));
  last_tiles = tiles;
  if (pairs > 0) mask_kernel<kRot><<<mask_grid, kTile, 0, st>>>(pairs, bounded ? pair_offsets.data() + tiles : nullptr, m,
                                                 pair_row.data(), pair_col.data(), prep_q_buf.data(), prio_q,
                                                 group_q.data(), can_q.data(), prm.pixel_offset,
                                                 prm.iou_threshold, prm.suppress_at_equal, words.data());
  S3D_CUDA_CHECK_LAUNCH();

  // Parallel greedy scan.
  state.resize(m, st);
  counters.resize(3, st);
  rounds.resize(1, st);
  init_state_kernel<<<blocks(m), 256, 0, st>>>(m, can_q.data(), state.data(), counters.data());
  S3D_CUDA_CHECK_LAUNCH();
  static int blocks_per_sm = 0, warp_blocks_per_sm = 0;
  if (blocks_per_sm == 0) {
    S3D_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, scan_rounds_kernel, 256, 0));
    blocks_per_sm = std::max(1, blocks_per_sm);
    S3D_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&warp_blocks_per_sm, scan_rounds_warp_kernel, 256, 0));
    warp_blocks_per_sm = std::max(1, warp_blocks_per_sm);
  }
  const bool warp_scan = m <= kWarpScanMaxBoxes;
  const unsigned scan_grid =
      warp_scan ? std::min<unsigned>(blocks(static_cast<std::size_t>(m) * 32),
                                     static_cast<unsigned>(warp_blocks_per_sm * sm_count))
                : std::min<unsigned>(blocks(m), static_cast<unsigned>(blocks_per_sm * sm_count));
  {
    int m_arg = m;
    const long long* off = pair_offsets.data();
    const int* col = pair_col.data();
    const unsigned long long* w = words.data();
    unsigned char* stt = state.data();
    unsigned* cnt = counters.data();
    int* rnd = rounds.data();
    void* args[] = {&m_arg, &off, &col, &w, &stt, &cnt, &rnd};
    const void* kernel = warp_scan ? reinterpret_cast<const void*>(scan_rounds_warp_kernel)
                                   : reinterpret_cast<const void*>(scan_rounds_kernel);
    S3D_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(scan_grid), dim3(256), args, 0, st));
  }

  // Output in global rank order.
  const int n = static_cast<int>(in.count);
  flags.resize(n, st);
  S3D_CUDA_CHECK(cudaMemsetAsync(flags.data(), 0, n, st));
  kept_by_rank_kernel<<<blocks(m), 256, 0, st>>>(m, prio_q, sop, key_b.data(), state.data(), flags.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceSelect::Flagged(t, b, idx_s.data(), flags.data(), idx_a.data(), count_int.data(), n, st);
  }, st);
  finish_output_kernel<<<blocks(m), 256, 0, st>>>(count_int.data(), idx_a.data(), in.scores, keep.data(),
                                                   out_scores.data(), count.data());
  S3D_CUDA_CHECK_LAUNCH();
}

template <bool kRot>
void NmsCuda::State::run_soft(const NmsInput& in, const NmsParams& prm, int m, bool grouped, StreamHandle st) {
  using Box = typename BoxOf<kRot>::type;
  DeviceBuffer<Box>& prep_p_buf = [&]() -> DeviceBuffer<Box>& {
    if constexpr (kRot) return rot_p; else return axis_p;
  }();
  const int* sop = use_sop ? s_of_p.data() : nullptr;
  prep_p_buf.resize(m, st);
  bounds_p.resize(m, st);
  can_p.resize(m, st);
  prepare_kernel<kRot><<<blocks(m), 256, 0, st>>>(m, sop, idx_s.data(), key_b.data(), in.boxes, prm.pixel_offset,
                                                   prep_p_buf.data(), bounds_p.data(), can_p.data(), nullptr);
  S3D_CUDA_CHECK_LAUNCH();
  head.resize(m, st);
  group_index.resize(m, st);
  group_start.resize(m, st);
  group_end.resize(m, st);
  head_flags_kernel<<<blocks(m), 256, 0, st>>>(m, grouped ? gkey_p.data() : nullptr, head.data(), nullptr);
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceScan::InclusiveSum(t, b, head.data(), group_index.data(), m, st);
  }, st);
  decrement_kernel<<<blocks(m), 256, 0, st>>>(m, group_index.data());
  S3D_CUDA_CHECK_LAUNCH();
  group_bounds_kernel<<<blocks(m), 256, 0, st>>>(m, head.data(), group_index.data(), group_start.data(),
                                                  group_end.data());
  S3D_CUDA_CHECK_LAUNCH();
  const int groups = static_cast<int>(read_int(group_index.data() + (m - 1), st)) + 1;

  cur.resize(m, st);
  flags.resize(m, st);
  soft_key.resize(m, st);
  soft_key_b.resize(m, st);
  soft_score.resize(m, st);
  soft_score_b.resize(m, st);
  S3D_CUDA_CHECK(cudaMemsetAsync(count_int.data(), 0, sizeof(int), st));
  const int method = prm.method == NmsMethod::kSoftLinear ? 1 : 2;
  soft_idx.resize(m, st);
  soft_pos.resize(static_cast<std::size_t>(in.count), st);
  // the margin only matters with pixel_offset 1; the magnitude bound is taken generously from the boxes' type
  const float margin = prune_margin(prm.pixel_offset, prm.pixel_offset ? max_abs_coordinate(in, prm, st) : 0.f);
  // Groups up to small_max boxes: soft_small_kernel (shared memory sized by the largest group that can occur);
  // larger groups: soft_kernel. Each kernel returns at once for the other's groups.
  const int small_max = std::min(kSoftSmallMax, soft_smem_boxes_max);
  const int smem_boxes = std::min(m, small_max);
  const std::size_t smem = static_cast<std::size_t>(smem_boxes) * (sizeof(float4) + sizeof(unsigned));
  if (smem > soft_smem_attr[kRot ? 1 : 0]) {
    S3D_CUDA_CHECK(cudaFuncSetAttribute(soft_small_kernel<kRot>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
    soft_smem_attr[kRot ? 1 : 0] = smem;
  }
  soft_small_kernel<kRot><<<groups, kSoftSmallThreads, smem, st>>>(
      group_start.data(), group_end.data(), prep_p_buf.data(), bounds_p.data(), can_p.data(), sop, idx_s.data(),
      in.scores, method, prm.iou_threshold, prm.suppress_at_equal, prm.sigma, prm.soft_min_score, prm.pixel_offset,
      margin, soft_key.data(), soft_score.data(), count_int.data(), small_max, smem_boxes);
  S3D_CUDA_CHECK_LAUNCH();
  if (m > small_max)
    soft_kernel<kRot><<<groups, kSoftBlock, 0, st>>>(group_start.data(), group_end.data(), prep_p_buf.data(),
                                                   bounds_p.data(), can_p.data(), sop, idx_s.data(), in.scores,
                                                   method, prm.iou_threshold, prm.suppress_at_equal, prm.sigma,
                                                   prm.soft_min_score, prm.pixel_offset, margin, cur.data(),
                                                   flags.data(), soft_idx.data(), soft_pos.data(), soft_key.data(),
                                                   soft_score.data(), count_int.data(), small_max);
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, soft_key.data(), soft_key_b.data(), soft_score.data(),
                                           soft_score_b.data(), m, 0, 64, st);
  }, st);
  finish_soft_kernel<<<blocks(m), 256, 0, st>>>(count_int.data(), soft_key_b.data(), soft_score_b.data(), keep.data(),
                                                 out_scores.data(), count.data());
  S3D_CUDA_CHECK_LAUNCH();
}

void NmsCuda::State::run_fused(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
  const int n = static_cast<int>(in.count);
  const int tiles = (n + kTile - 1) / kTile;
  fused_order.resize(n, st);
  fused_m.resize(1, st);
  count_int.resize(2, st);  // apply_max_dets (image ids) compacts through it
  list_count.resize(n, st);
  list_col.resize(static_cast<std::size_t>(n) * tiles, st);
  list_word.resize(static_cast<std::size_t>(n) * tiles, st);
  stats.boxes = n;  // upper bound: boxes failing min_score are dropped on the device
  stats.tile_pairs = static_cast<std::int64_t>(tiles) * (tiles + 1) / 2;
  stats.rounds = -1;
  last_tiles = 0;
  if (n <= 1024) {
    fused_sort_kernel<256, 4><<<1, 256, FusedSort<256, 4>::kSmem, st>>>(n, in.scores, prm.min_score,
                                                                        fused_order.data(), fused_m.data(),
                                                                        list_count.data());
  } else if (n <= 4096) {
    fused_sort_kernel<512, 8><<<1, 512, FusedSort<512, 8>::kSmem, st>>>(n, in.scores, prm.min_score,
                                                                        fused_order.data(), fused_m.data(),
                                                                        list_count.data());
  } else {
    fused_sort_kernel<1024, 16><<<1, 1024, FusedSort<1024, 16>::kSmem, st>>>(n, in.scores, prm.min_score,
                                                                             fused_order.data(), fused_m.data(),
                                                                             list_count.data());
  }
  S3D_CUDA_CHECK_LAUNCH();
  const unsigned pairs = static_cast<unsigned>(stats.tile_pairs);
  fused_mask_kernel<<<pairs, kTile, 0, st>>>(tiles, fused_m.data(), fused_order.data(), in.boxes, in.group_ids,
                                             prm.pixel_offset, prm.iou_threshold, prm.suppress_at_equal,
                                             list_count.data(), list_col.data(), list_word.data());
  S3D_CUDA_CHECK_LAUNCH();
  fused_scan_kernel<<<1, kFusedScanThreads, 0, st>>>(tiles, fused_m.data(), list_count.data(), list_col.data(),
                                                      list_word.data(), fused_order.data(), in.scores,
                                                      in.image_ids ? 0 : prm.max_dets, keep.data(),
                                                      out_scores.data(), count.data());
  S3D_CUDA_CHECK_LAUNCH();
}

void NmsCuda::State::apply_max_dets(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
  if (!in.image_ids) {
    clamp_count_kernel<<<1, 1, 0, st>>>(count.data(), prm.max_dets);
    S3D_CUDA_CHECK_LAUNCH();
    return;
  }
  const long long k = read_ll(reinterpret_cast<const long long*>(count.data()), st);
  if (k <= prm.max_dets) return;
  const int kk = static_cast<int>(k);
  skey_a.resize(kk, st);
  skey_b.resize(kk, st);
  p_val.resize(kk, st);
  p_of_q.resize(kk, st);
  head.resize(kk, st);
  scratch_int.resize(kk, st);
  seg_start.resize(kk, st);
  flags.resize(kk, st);
  idx_a.resize(kk, st);
  keep_b.resize(kk, st);
  out_scores_b.resize(kk, st);
  image_keys_kernel<<<blocks(kk), 256, 0, st>>>(kk, keep.data(), in.image_ids, skey_a.data(), p_val.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, skey_a.data(), skey_b.data(), p_val.data(), p_of_q.data(), kk, 0, 64,
                                           st);
  }, st);
  head_flags_kernel<<<blocks(kk), 256, 0, st>>>(kk, skey_b.data(), head.data(), scratch_int.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceScan::InclusiveScan(t, b, scratch_int.data(), seg_start.data(), MaxOp(), kk, st);
  }, st);
  rank_in_image_kernel<<<blocks(kk), 256, 0, st>>>(kk, seg_start.data(), p_of_q.data(), prm.max_dets, flags.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub_call([&](void* t, std::size_t& b) {
    return cub::DeviceSelect::Flagged(t, b, thrust::counting_iterator<int>(0), flags.data(), idx_a.data(),
                                      count_int.data(), kk, st);
  }, st);
  gather_selected_kernel<<<blocks(kk), 256, 0, st>>>(count_int.data(), idx_a.data(), keep.data(), out_scores.data(),
                                                      keep_b.data(), out_scores_b.data(), count.data());
  S3D_CUDA_CHECK_LAUNCH();
  std::swap(keep, keep_b);
  std::swap(out_scores, out_scores_b);
}

NmsCuda::NmsCuda(int device_index) : state_(std::make_unique<State>(device_index)) {}
NmsCuda::~NmsCuda() = default;

void NmsCuda::run_device(const NmsInput& device_input, const NmsParams& params, StreamHandle stream) {
  state_->run_device(device_input, params, stream);
}

/// Device-resident calls whose launch sequence needs no host synchronization (hard NMS of at most
/// kBoundedMaskMaxTiles tiles, no active min_score / pre_top_k filter, max_dets without image ids) are
/// captured into a CUDA graph the second time the same call (same pointers, count, params and stream) is made,
/// and the graph is replayed while it repeats: one launch instead of ~30, the same kernels on the same
/// buffers, so results are identical. The first call runs eagerly and sizes every buffer, so the captured
/// call allocates nothing; any other call runs eagerly and drops the graph (it may reallocate buffers).
void NmsCuda::State::run_device(const NmsInput& in, const NmsParams& prm, StreamHandle st) {
  const bool capturable =
      !graphs_disabled && st != nullptr && prm.method == NmsMethod::kHard && in.count > 0 &&
      (prm.max_dets == 0 || in.image_ids == nullptr) &&
      (fused_applies(in, prm) ||  // the fused path never synchronizes (min_score is applied on the device)
       (in.count <= static_cast<std::int64_t>(kBoundedMaskMaxTiles) * kTile && !(prm.min_score > -INFINITY) &&
        (prm.pre_top_k == 0 || prm.pre_top_k >= in.count)));
  if (!capturable) {
    drop_graph();
    seen = false;
    run(in, prm, st);
    return;
  }
  GraphKey key;
  key.boxes = in.boxes;
  key.scores = in.scores;
  key.groups = in.group_ids;
  key.images = in.image_ids;
  key.count = in.count;
  key.stream = st;
  key.params = prm;
  if (graph_exec && key == graph_key) {
    S3D_CUDA_CHECK(cudaGraphLaunch(graph_exec, st));
    stats = graph_stats;
    last_tiles = graph_last_tiles;
    stats.graph = true;
    return;
  }
  drop_graph();
  if (!(seen && key == seen_key)) {
    run(in, prm, st);
    seen_key = key;
    seen = true;
    return;
  }
  // Second identical call: capture it (nothing is allocated: the first call sized every buffer).
  seen = false;
  cudaGraph_t graph = nullptr;
  S3D_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  bool ok = true;
  try {
    run(in, prm, st);
  } catch (...) {
    ok = false;
  }
  const cudaError_t end = cudaStreamEndCapture(st, &graph);
  if (ok && end == cudaSuccess && graph != nullptr) {
    const cudaError_t inst = cudaGraphInstantiate(&graph_exec, graph, 0);
    if (inst != cudaSuccess) graph_exec = nullptr;
  }
  if (graph) cudaGraphDestroy(graph);
  if (!graph_exec) {  // capture not supported here (e.g. the cooperative scan): run eagerly from now on
    (void)cudaGetLastError();
    graphs_disabled = true;
    run(in, prm, st);
    return;
  }
  graph_key = key;
  graph_stats = stats;
  graph_last_tiles = last_tiles;
  stats.graph = true;
  S3D_CUDA_CHECK(cudaGraphLaunch(graph_exec, st));
}

NmsResult NmsCuda::run_host(const NmsInput& in, const NmsParams& params, StreamHandle st) {
  State& s = *state_;
  s.drop_graph();  // the uploads and this run may reallocate the buffers a graph points to
  s.seen = false;
  const std::size_t n = static_cast<std::size_t>(in.count);
  NmsInput dev;
  dev.count = in.count;
  if (n) {
    s.in_boxes.copy_from_host_async(in.boxes, n * params.box_dim(), st);
    s.in_scores.copy_from_host_async(in.scores, n, st);
    dev.boxes = s.in_boxes.data();
    dev.scores = s.in_scores.data();
    if (in.group_ids) {
      s.in_groups.copy_from_host_async(in.group_ids, n, st);
      dev.group_ids = s.in_groups.data();
    }
    if (in.image_ids) {
      s.in_images.copy_from_host_async(in.image_ids, n, st);
      dev.image_ids = s.in_images.data();
    }
  }
  s.run(dev, params, st);
  return download(st);
}

const std::int64_t* NmsCuda::keep() const { return state_->keep.data(); }
const float* NmsCuda::scores() const { return state_->out_scores.data(); }
const std::int64_t* NmsCuda::keep_count() const { return state_->count.data(); }

NmsResult NmsCuda::download(StreamHandle st) const {
  State& s = *state_;
  NmsResult r;
  const long long k = s.read_ll(reinterpret_cast<const long long*>(s.count.data()), st);
  r.keep.resize(static_cast<std::size_t>(k));
  r.scores.resize(static_cast<std::size_t>(k));
  if (k > 0) {
    S3D_CUDA_CHECK(cudaMemcpyAsync(r.keep.data(), s.keep.data(), k * sizeof(std::int64_t), cudaMemcpyDeviceToHost, st));
    S3D_CUDA_CHECK(cudaMemcpyAsync(r.scores.data(), s.out_scores.data(), k * sizeof(float), cudaMemcpyDeviceToHost, st));
    S3D_CUDA_CHECK(cudaStreamSynchronize(st));
  }
  return r;
}

NmsEngine::Stats NmsCuda::stats() const {
  NmsEngine::Stats st = state_->stats;
  if (state_->last_tiles > 0) {
    int r = 0;
    long long pairs = 0;
    S3D_CUDA_CHECK(cudaDeviceSynchronize());
    S3D_CUDA_CHECK(cudaMemcpy(&r, state_->rounds.data(), sizeof(int), cudaMemcpyDeviceToHost));
    S3D_CUDA_CHECK(cudaMemcpy(&pairs, state_->pair_offsets.data() + state_->last_tiles, sizeof(long long),
                              cudaMemcpyDeviceToHost));
    st.rounds = r;
    st.tile_pairs = pairs;
  }
  return st;
}

}  // namespace s3d::detection::detail
