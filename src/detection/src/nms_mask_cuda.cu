// The sparse suppression mask of hard NMS: a 64x64 tile pair (row tile r, column tile c) is evaluated only when
// the two tiles' bounds overlap and they share a group (culled first by super-tiles of 32 tiles, then by
// tiles). Row box i's 64-bit word for tile c holds bit j iff j is in i's group, ranks higher than i, and
// IoU(j, i) passes: the upper triangle of the priority order, stored per suppressed box. Memory is
// pairs x 64 words, not M^2/64.
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

constexpr int kPairBlock = 128;
constexpr int kSuper = 32;  // tiles per super-tile

/// Per tile: union bounds of boxes that can overlap, and the tile range of its groups.
__global__ void tile_bounds_kernel(int m, int tiles, const float4* bounds_q, const unsigned char* can_q,
                                   const int* group_q, const int* group_start, const int* group_end,
                                   bool priority_order, float4* tile_bounds, int2* column_range) {
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
    tile_bounds[t] = make_float4(fminf(a.x, c.x), fminf(a.y, c.y), fmaxf(a.z, c.z), fmaxf(a.w, c.w));
    const int first = t * kTile, last = min(m, first + kTile) - 1;
    const int g0 = group_q[first], g1 = group_q[last];
    // In priority order a box's suppressors rank higher, so they sit in this tile or an earlier one.
    const int hi = (group_end[g1] - 1) / kTile;
    column_range[t] = make_int2(group_start[g0] / kTile, priority_order ? min(hi, t) : hi);
  }
}

__global__ void super_bounds_kernel(int tiles, const float4* tile_bounds, float4* super_tile_bounds) {
  const int c = blockIdx.x * kSuper + threadIdx.x;
  float4 b = c < tiles ? tile_bounds[c] : make_float4(INFINITY, INFINITY, -INFINITY, -INFINITY);
  for (int o = 16; o > 0; o >>= 1) {
    b.x = fminf(b.x, __shfl_down_sync(0xFFFFFFFFu, b.x, o));
    b.y = fminf(b.y, __shfl_down_sync(0xFFFFFFFFu, b.y, o));
    b.z = fmaxf(b.z, __shfl_down_sync(0xFFFFFFFFu, b.z, o));
    b.w = fmaxf(b.w, __shfl_down_sync(0xFFFFFFFFu, b.w, o));
  }
  if (threadIdx.x == 0) super_tile_bounds[blockIdx.x] = b;
}

/// Candidate column tiles per row tile: count pass (offsets == nullptr) or fill pass. Super-tiles of 32
/// consecutive (spatially sorted) tiles are tested first, then their tiles.
__global__ void tile_pairs_kernel(int tiles, const float4* tile_bounds, const float4* super_tile_bounds,
                                  const int2* column_range, const unsigned* extent, int offset,
                                  const long long* offsets, long long* counts, int* pair_row, int* pair_col,
                                  bool direct) {
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
    const float4 a = tile_bounds[r];
    const int2 range = column_range[r];
    long long base = offsets ? offsets[r] : 0;
    long long count = 0;
    if (direct) {  // few tiles: one column tile per thread, no super-tile level (the same pairs, in c order)
      for (int cb = range.x; cb <= range.y; cb += kPairBlock) {
        const int c = cb + static_cast<int>(threadIdx.x);
        const int hit = (c <= range.y && bounds_may_intersect(a, tile_bounds[c], margin)) ? 1 : 0;
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
      if (sidx <= s1 && bounds_may_intersect(a, super_tile_bounds[sidx], margin)) {
        for (int k = 0; k < kSuper; ++k) {
          const int c = sidx * kSuper + k;
          if (c >= range.x && c <= range.y && bounds_may_intersect(a, tile_bounds[c], margin)) hit |= 1u << k;
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
                            const BoxType<kRot>* prep_q, const int* priority_q, const int* group_q,
                            const unsigned char* can_q, int offset, float thr, bool ge, unsigned long long* words) {
  using Box = BoxType<kRot>;
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
      sprio[t] = priority_q[j];
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
      const int pi = priority_q[i], gi = group_q[i];
      if constexpr (kRot) {
        for (int k = 0; k < kTile; ++k) {
          if (!scan_ok[k] || sgroup[k] != gi || sprio[k] >= pi) continue;
          if (iou_passes(rot_iou(sbox[k], mine), thr, ge)) bits |= 1ull << k;
        }
      } else {  // the candidates first (overlap_candidates; columns past m are dropped by scan_ok), then the IoU
        unsigned long long cand = overlap_candidates<kTile>(sbox, mine, offset, kTile);
        while (cand) {
          const int k = pop_lowest(cand);
          if (!scan_ok[k] || sgroup[k] != gi || sprio[k] >= pi) continue;
          if (iou_passes(axis_iou(sbox[k], mine, offset), thr, ge)) bits |= 1ull << k;
        }
      }
    }
    words[pair * kTile + t] = bits;
    __syncthreads();
  }
}

}  // namespace

template <bool kRot>
MaskShape build_mask(int m, TiledBoxes& tiled, const GroupRanges& groups, bool priority_order, const unsigned* extent,
                     const NmsParams& prm, int sm_count, TileMask& mask, CubScratch& cub, HostReadback& readback,
                     StreamHandle st) {
  const int tiles = (m + kTile - 1) / kTile;
  mask.tile_bounds.resize(tiles, st);
  mask.column_range.resize(tiles, st);
  tile_bounds_kernel<<<tiles, kTile, 0, st>>>(m, tiles, tiled.bounds.data(), tiled.can_overlap.data(),
                                              tiled.group.data(), groups.group_start.data(), groups.group_end.data(),
                                              priority_order, mask.tile_bounds.data(), mask.column_range.data());
  S3D_CUDA_CHECK_LAUNCH();
  mask.pair_count.resize(tiles + 1, st);
  mask.pair_offset.resize(tiles + 1, st);
  const int supers = (tiles + kSuper - 1) / kSuper;
  mask.super_tile_bounds.resize(supers, st);
  const bool direct = tiles <= kBoundedMaskMaxTiles;  // few tiles: test each tile pair directly
  if (!direct) {
    super_bounds_kernel<<<supers, kSuper, 0, st>>>(tiles, mask.tile_bounds.data(), mask.super_tile_bounds.data());
    S3D_CUDA_CHECK_LAUNCH();
  }
  const unsigned pair_grid = static_cast<unsigned>(std::min(tiles, sm_count * 16));
  tile_pairs_kernel<<<pair_grid, kPairBlock, 0, st>>>(tiles, mask.tile_bounds.data(), mask.super_tile_bounds.data(),
                                                      mask.column_range.data(), extent, prm.pixel_offset, nullptr,
                                                      mask.pair_count.data(), nullptr, nullptr, direct);
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceScan::ExclusiveSum(t, bytes, mask.pair_count.data(), mask.pair_offset.data(), tiles + 1, st);
      },
      st);
  // Large problems: one sync to size the mask. Small ones: the pair count is bounded (all tile pairs, or the
  // lower triangle in priority order) and the kernels read the real count on the device.
  const bool bounded = tiles <= kBoundedMaskMaxTiles;
  const long long pairs = !bounded          ? readback.read(mask.pair_offset.data() + tiles, st)
                          : !priority_order ? static_cast<long long>(tiles) * tiles
                                            : static_cast<long long>(tiles) * (tiles + 1) / 2;
  mask.pair_row.resize(static_cast<std::size_t>(pairs), st);
  mask.pair_col.resize(static_cast<std::size_t>(pairs), st);
  mask.suppressor_words.resize(static_cast<std::size_t>(pairs) * kTile, st);
  tile_pairs_kernel<<<pair_grid, kPairBlock, 0, st>>>(
      tiles, mask.tile_bounds.data(), mask.super_tile_bounds.data(), mask.column_range.data(), extent, prm.pixel_offset,
      mask.pair_offset.data(), nullptr, mask.pair_row.data(), mask.pair_col.data(), direct);
  S3D_CUDA_CHECK_LAUNCH();
  const unsigned mask_grid = static_cast<unsigned>(std::min<long long>(pairs, 1ll << 24));
  if (pairs > 0)
    mask_kernel<kRot><<<mask_grid, kTile, 0, st>>>(
        pairs, bounded ? mask.pair_offset.data() + tiles : nullptr, m, mask.pair_row.data(), mask.pair_col.data(),
        tiled.boxes<kRot>().data(), tiled.priority.data(), tiled.group.data(), tiled.can_overlap.data(),
        prm.pixel_offset, prm.iou_threshold, prm.suppress_at_equal, mask.suppressor_words.data());
  S3D_CUDA_CHECK_LAUNCH();
  return {tiles, pairs};
}

template MaskShape build_mask<false>(int, TiledBoxes&, const GroupRanges&, bool, const unsigned*, const NmsParams&, int,
                                     TileMask&, CubScratch&, HostReadback&, StreamHandle);
template MaskShape build_mask<true>(int, TiledBoxes&, const GroupRanges&, bool, const unsigned*, const NmsParams&, int,
                                    TileMask&, CubScratch&, HostReadback&, StreamHandle);

}  // namespace s3d::detection::detail
