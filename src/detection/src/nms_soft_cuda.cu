// Soft-NMS (Bodla et al. 2017; mmcv's selection loop): repeatedly select the live box with the highest current
// score (ties -> lower input index), decay the others by their IoU with it and drop those under the minimum.
// Two ways to the same result, bit for bit:
//  - by parallel rounds over the graph of interacting boxes (nms_soft_rounds_cuda.cu), taken whenever that graph
//    is sparse enough (kSoftRoundsMaxAverageDegree, kSoftRoundsMaxEntries): detector outputs, clustered or not;
//  - otherwise one block per group runs the loop itself. Groups of up to ~11k boxes keep their state in shared
//    memory and registers (soft_small_kernel); larger ones in global memory (soft_kernel).
// Either way the selections are then sorted into the output order.
#include <algorithm>
#include <cub/device/device_radix_sort.cuh>

#include "nms_soft_rounds.cuh"
#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

constexpr int kSoftBlock = 1024;

/// One block per group runs mmcv's loop: select the live box with the highest current score (ties -> lower
/// input index), decay the others, drop those under the minimum. Each thread owns a fixed strided subset of
/// the group and caches the best key of its subset; only a selection that touches the subset (an overlapping
/// box, or the selected one) makes it rescan. Boxes whose bounds do not overlap the selected one have
/// inter = 0, weight exactly 1, and are skipped: exact. One __syncthreads per selection (double-buffered).
template <bool kRot>
__global__ void __launch_bounds__(kSoftBlock)
    soft_kernel(const int* group_start, const int* group_end, const BoxType<kRot>* prep, const float4* bounds,
                const unsigned char* can, const int* rank_of_priority, const int* input_of_rank, const float* scores,
                int method, float thr, bool ge, float sigma, float min_score, int offset, float margin, float* cur,
                unsigned char* alive, int* input_of_position, int* position_of_input, unsigned long long* out_key,
                float* out_score, int* total_selected, int small_max) {
  using Box = BoxType<kRot>;
  const int g = blockIdx.x;
  const int b = group_start[g], e = group_end[g];
  if (e - b <= small_max) return;  // soft_small_kernel runs this group
  auto key_of = [&](int p) {
    const float sc = cur[p];
    unsigned bits;
    memcpy(&bits, &sc, 4);
    return (static_cast<unsigned long long>(descending_score_key(sc, bits)) << 32) |
           static_cast<unsigned>(input_of_position[p]);
  };
  unsigned long long mine = ~0ull;
  for (int p = b + threadIdx.x; p < e; p += blockDim.x) {
    const int i = input_of_rank[rank_of_priority ? rank_of_priority[p] : p];
    const float sc = scores[i];
    input_of_position[p] = i;
    position_of_input[i] = p;
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
    const int a = position_of_input[static_cast<int>(best & 0xFFFFFFFFull)];
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
        if (!bounds_may_intersect(ba, bp, margin)) continue;  // no intersection possible: weight 1
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
    soft_small_kernel(const int* group_start, const int* group_end, const BoxType<kRot>* prep, const float4* bounds,
                      const unsigned char* can, const int* rank_of_priority, const int* input_of_rank,
                      const float* scores, int method, float thr, bool ge, float sigma, float min_score, int offset,
                      float margin, unsigned long long* out_key, float* out_score, int* total_selected, int small_max,
                      int smem_boxes) {
  using Box = BoxType<kRot>;
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
      const int i = input_of_rank[rank_of_priority ? rank_of_priority[p] : p];
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
        const unsigned long long key =
            (static_cast<unsigned long long>(descending_score_key(cur[k], bits)) << 32) | (sidx[l] & ~kCanBit);
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
        if (!bounds_may_intersect(ba, bp, margin)) continue;  // no intersection possible: weight 1
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

/// The sequential loop, one block per group (see soft_small_kernel and soft_kernel).
template <bool kRot>
void soft_nms_sequential(const NmsInput& in, const NmsParams& prm, const Ranking& ranked, SoftBuffers& b, float margin,
                         HostReadback& readback, StreamHandle st) {
  const int m = ranked.boxes;
  const int groups = static_cast<int>(readback.read(b.groups.group_of_box.data() + (m - 1), st)) + 1;
  const int method = prm.method == NmsMethod::kSoftLinear ? 1 : 2;
  b.current_score.resize(m, st);
  b.alive.resize(m, st);
  b.input_of_position.resize(m, st);
  b.position_of_input.resize(static_cast<std::size_t>(in.count), st);
  // Groups up to small_max boxes: soft_small_kernel (shared memory sized by the largest group that can occur);
  // larger groups: soft_kernel. Each kernel returns at once for the other's groups.
  const int small_max = std::min(kSoftSmallMax, b.shared_boxes_max);
  const int smem_boxes = std::min(m, small_max);
  const std::size_t smem = static_cast<std::size_t>(smem_boxes) * (sizeof(float4) + sizeof(unsigned));
  if (smem > b.shared_bytes_allowed[kRot ? 1 : 0]) {
    S3D_CUDA_CHECK(cudaFuncSetAttribute(soft_small_kernel<kRot>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
    b.shared_bytes_allowed[kRot ? 1 : 0] = smem;
  }
  const BoxType<kRot>* prep = b.prepared.boxes<kRot>().data();
  soft_small_kernel<kRot><<<groups, kSoftSmallThreads, smem, st>>>(
      b.groups.group_start.data(), b.groups.group_end.data(), prep, b.prepared.bounds.data(),
      b.prepared.can_overlap.data(), ranked.rank_of_priority, ranked.input_of_rank, in.scores, method,
      prm.iou_threshold, prm.suppress_at_equal, prm.sigma, prm.soft_min_score, prm.pixel_offset, margin,
      b.selection_key.data(), b.selection_score.data(), b.selected_count.data(), small_max, smem_boxes);
  S3D_CUDA_CHECK_LAUNCH();
  if (m > small_max)
    soft_kernel<kRot><<<groups, kSoftBlock, 0, st>>>(
        b.groups.group_start.data(), b.groups.group_end.data(), prep, b.prepared.bounds.data(),
        b.prepared.can_overlap.data(), ranked.rank_of_priority, ranked.input_of_rank, in.scores, method,
        prm.iou_threshold, prm.suppress_at_equal, prm.sigma, prm.soft_min_score, prm.pixel_offset, margin,
        b.current_score.data(), b.alive.data(), b.input_of_position.data(), b.position_of_input.data(),
        b.selection_key.data(), b.selection_score.data(), b.selected_count.data(), small_max);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace

int soft_shared_boxes_max(int optin_bytes) {
  return std::max(0, (optin_bytes - 2048) / static_cast<int>(sizeof(float4) + sizeof(unsigned)));
}

template <bool kRot>
void soft_nms(const NmsInput& in, const NmsParams& prm, const Ranking& ranked, SoftBuffers& b, CubScratch& cub,
              HostReadback& readback, DeviceResult& result, StreamHandle st) {
  const int m = ranked.boxes;
  prepare_boxes<kRot>(ranked, in.boxes, prm.pixel_offset, /*with_extent=*/false, b.prepared, st);
  find_groups(m, ranked.group_key_of_priority, b.groups, cub, st);

  b.selection_key.resize(m, st);
  b.sorted_selection_key.resize(m, st);
  b.selection_score.resize(m, st);
  b.sorted_selection_score.resize(m, st);
  b.selected_count.resize(1, st);
  S3D_CUDA_CHECK(cudaMemsetAsync(b.selected_count.data(), 0, sizeof(int), st));
  // the margin only matters with pixel_offset 1
  const float margin = prune_margin(prm.pixel_offset, prm.pixel_offset ? max_abs_coordinate(m, b.prepared, st) : 0.f);
  if (!soft_nms_rounds<kRot>(in, prm, ranked, b, margin, cub, readback, st))
    soft_nms_sequential<kRot>(in, prm, ranked, b, margin, readback, st);
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(t, bytes, b.selection_key.data(), b.sorted_selection_key.data(),
                                               b.selection_score.data(), b.sorted_selection_score.data(), m, 0, 64, st);
      },
      st);
  finish_soft_kernel<<<grid_for(m), 256, 0, st>>>(b.selected_count.data(), b.sorted_selection_key.data(),
                                                  b.sorted_selection_score.data(), result.keep.data(),
                                                  result.scores.data(), result.count.data());
  S3D_CUDA_CHECK_LAUNCH();
}

template void soft_nms<false>(const NmsInput&, const NmsParams&, const Ranking&, SoftBuffers&, CubScratch&,
                              HostReadback&, DeviceResult&, StreamHandle);
template void soft_nms<true>(const NmsInput&, const NmsParams&, const Ranking&, SoftBuffers&, CubScratch&,
                             HostReadback&, DeviceResult&, StreamHandle);

}  // namespace s3d::detection::detail
