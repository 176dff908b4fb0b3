// Box geometry: the ranked boxes prepared for the pair math in priority order, their union extent, and the
// tile order of the hard-NMS mask (Morton order of the box centres within each group, so that a 64-box tile
// covers a small area and the tile-pair culling removes most pairs).
#include <cmath>
#include <cub/device/device_radix_sort.cuh>

#include "nms_stages_cuda.cuh"
#include "s3d/core/cuda_arch.cuh"

namespace s3d::detection::detail {
namespace {

/// Low Morton bits left unsorted for problems the warp scan handles (cells of 1/1024 of the extent): the
/// order only shapes the tiles (culling), never a decision, and one radix pass less is a launch less.
constexpr int kMortonSkipBits = 12;

template <bool kRot>
__global__ void prepare_kernel(int m, const int* rank_of_priority, const int* input_of_rank,
                               const unsigned* score_key_of_rank, const float* boxes, int offset, BoxType<kRot>* prep,
                               float4* bounds, unsigned char* can, unsigned* extent) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;  // blockDim is a multiple of 32: whole warps reduce
  bool ok = false;
  float4 b = make_float4(0.f, 0.f, 0.f, 0.f);
  if (p < m) {
    const int s = rank_of_priority ? rank_of_priority[p] : p;
    const int i = input_of_rank[s];
    const bool dead = score_key_of_rank[s] == kDeadKey;
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
__global__ void morton_kernel(int m, const int* group_of_box, const float4* bounds, const unsigned char* can,
                              const unsigned* extent, unsigned long long* key, int* priority_sequence) {
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
  const unsigned long long g = group_of_box ? static_cast<unsigned long long>(group_of_box[p]) : 0ull;
  key[p] = (g << 32) | code;
  priority_sequence[p] = p;
}

/// Gathers priority-order data into tile order.
template <typename Box>
__global__ void gather_tiled_kernel(int m, const int* priority_of_sorted, const Box* prep_p, const float4* bounds_p,
                                    const unsigned char* can_p, const int* group_p, Box* prep_q, float4* bounds_q,
                                    unsigned char* can_q, int* group_q, int* priority_q) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= m) return;
  const int p = priority_of_sorted ? priority_of_sorted[q] : q;  // null: tile order is the priority order
  priority_q[q] = p;
  prep_q[q] = prep_p[p];
  bounds_q[q] = bounds_p[p];
  can_q[q] = can_p[p];
  group_q[q] = group_p ? group_p[p] : 0;
}

}  // namespace

template <bool kRot>
void prepare_boxes(const Ranking& ranked, const float* boxes, int pixel_offset, bool with_extent, PreparedBoxes& out,
                   StreamHandle st) {
  const int m = ranked.boxes;
  out.boxes<kRot>().resize(m, st);
  out.bounds.resize(m, st);
  out.can_overlap.resize(m, st);
  if (with_extent) {
    out.extent.resize(4, st);
    init_extent_kernel<<<1, 1, 0, st>>>(out.extent.data());
    S3D_CUDA_CHECK_LAUNCH();
  }
  prepare_kernel<kRot><<<grid_for(m), 256, 0, st>>>(
      m, ranked.rank_of_priority, ranked.input_of_rank, ranked.score_key_of_rank, boxes, pixel_offset,
      out.boxes<kRot>().data(), out.bounds.data(), out.can_overlap.data(), with_extent ? out.extent.data() : nullptr);
  S3D_CUDA_CHECK_LAUNCH();
}

float max_abs_coordinate(int count, PreparedBoxes& prepared, StreamHandle st) {
  prepared.extent.resize(4, st);
  init_extent_kernel<<<1, 1, 0, st>>>(prepared.extent.data());
  S3D_CUDA_CHECK_LAUNCH();
  extent_kernel<<<grid_for(count), 256, 0, st>>>(count, prepared.bounds.data(), prepared.can_overlap.data(),
                                                 prepared.extent.data());
  S3D_CUDA_CHECK_LAUNCH();
  unsigned h[4];
  S3D_CUDA_CHECK(cudaMemcpyAsync(h, prepared.extent.data(), sizeof h, cudaMemcpyDeviceToHost, st));
  S3D_CUDA_CHECK(cudaStreamSynchronize(st));
  float mag = 0.f;
  for (unsigned o : h) mag = std::max(mag, std::fabs(from_ordered(o)));
  return mag;
}

template <bool kRot>
void order_tiles(const Ranking& ranked, PreparedBoxes& prepared, const GroupRanges& groups, bool spatial,
                 TiledBoxes& out, CubScratch& cub, StreamHandle st) {
  const int m = ranked.boxes;
  const int* group_of_box = ranked.grouped ? groups.group_of_box.data() : nullptr;
  out.boxes<kRot>().resize(m, st);
  out.bounds.resize(m, st);
  out.can_overlap.resize(m, st);
  out.group.resize(m, st);
  out.priority.resize(m, st);
  if (spatial) {
    out.morton_key.resize(m, st);
    out.sorted_morton_key.resize(m, st);
    out.priority_sequence.resize(m, st);
    out.priority_of_sorted.resize(m, st);
    morton_kernel<<<grid_for(m), 256, 0, st>>>(m, group_of_box, prepared.bounds.data(), prepared.can_overlap.data(),
                                               prepared.extent.data(), out.morton_key.data(),
                                               out.priority_sequence.data());
    S3D_CUDA_CHECK_LAUNCH();
    const int end_bit = ranked.grouped ? 32 + bit_length(static_cast<unsigned long long>(m)) : 32;
    // Large problems sort every Morton bit: the pass saved is one launch, which matters only for small problems,
    // while the coarser tile order costs more culling on large ones (docs/PERFORMANCE.md).
    const int begin_bit = m <= kWarpScanMaxBoxes ? kMortonSkipBits : 0;
    cub.run(
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceRadixSort::SortPairs(t, bytes, out.morton_key.data(), out.sorted_morton_key.data(),
                                                 out.priority_sequence.data(), out.priority_of_sorted.data(), m,
                                                 begin_bit, end_bit, st);
        },
        st);
  }
  gather_tiled_kernel<BoxType<kRot>><<<grid_for(m), 256, 0, st>>>(
      m, spatial ? out.priority_of_sorted.data() : nullptr, prepared.boxes<kRot>().data(), prepared.bounds.data(),
      prepared.can_overlap.data(), group_of_box, out.boxes<kRot>().data(), out.bounds.data(), out.can_overlap.data(),
      out.group.data(), out.priority.data());
  S3D_CUDA_CHECK_LAUNCH();
}

template void prepare_boxes<false>(const Ranking&, const float*, int, bool, PreparedBoxes&, StreamHandle);
template void prepare_boxes<true>(const Ranking&, const float*, int, bool, PreparedBoxes&, StreamHandle);
template void order_tiles<false>(const Ranking&, PreparedBoxes&, const GroupRanges&, bool, TiledBoxes&, CubScratch&,
                                 StreamHandle);
template void order_tiles<true>(const Ranking&, PreparedBoxes&, const GroupRanges&, bool, TiledBoxes&, CubScratch&,
                                StreamHandle);

}  // namespace s3d::detection::detail
