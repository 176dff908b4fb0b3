// Ranking: a stable radix sort by score (descending; NaN and scores below min_score get the dead key and sort
// last), then a stable sort by group over the ranked list, which yields the priority order (group-major, score
// descending, input index ascending); pre_top_k then keeps the first k of each group.
#include <thrust/iterator/counting_iterator.h>

#include <cmath>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

__global__ void score_keys_kernel(int n, const float* scores, float min_score, unsigned* score_key_of_input,
                                  int* input_sequence, int* live_count) {
  int local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float s = scores[i];
    unsigned bits;
    memcpy(&bits, &s, 4);
    const bool ok = s >= min_score;  // NaN fails
    score_key_of_input[i] = ok ? descending_score_key(s, bits) : kDeadKey;
    input_sequence[i] = i;
    local += ok ? 1 : 0;
  }
  if (live_count) {
    for (int o = 16; o > 0; o >>= 1) local += __shfl_down_sync(0xFFFFFFFFu, local, o);
    if ((threadIdx.x & 31) == 0 && local) atomicAdd(live_count, local);
  }
}

/// Group key per rank (sign flipped so that int64 order = uint64 order); dead entries go last.
__global__ void group_keys_kernel(int m, const int* input_of_rank, const unsigned* score_key_of_rank,
                                  const std::int64_t* groups, unsigned long long* group_key_of_rank,
                                  int* rank_sequence) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= m) return;
  const bool dead = score_key_of_rank[s] == kDeadKey;
  group_key_of_rank[s] =
      dead ? ~0ull : (static_cast<unsigned long long>(groups[input_of_rank[s]]) ^ 0x8000000000000000ull);
  rank_sequence[s] = s;
}

__global__ void top_k_flags_kernel(int m, const int* segment_start, long long k, unsigned char* in_top_k) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  in_top_k[p] = (p - segment_start[p]) < k ? 1 : 0;
}

}  // namespace

Ranking rank_boxes(const NmsInput& in, const NmsParams& prm, RankBuffers& b, CubScratch& cub, HostReadback& readback,
                   StreamHandle st) {
  const int n = static_cast<int>(in.count);
  Ranking ranked;
  b.score_key_of_input.resize(n, st);
  b.score_key_of_rank.resize(n, st);
  b.input_sequence.resize(n, st);
  b.input_of_rank.resize(n, st);
  b.live_count.resize(1, st);
  const bool filtering = prm.min_score > -INFINITY;
  if (filtering) S3D_CUDA_CHECK(cudaMemsetAsync(b.live_count.data(), 0, sizeof(int), st));
  score_keys_kernel<<<grid_for(n), 256, 0, st>>>(n, in.scores, prm.min_score, b.score_key_of_input.data(),
                                                 b.input_sequence.data(), filtering ? b.live_count.data() : nullptr);
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(t, bytes, b.score_key_of_input.data(), b.score_key_of_rank.data(),
                                               b.input_sequence.data(), b.input_of_rank.data(), n, 0, 32, st);
      },
      st);
  ranked.score_key_of_rank = b.score_key_of_rank.data();
  ranked.input_of_rank = b.input_of_rank.data();
  int m = n;
  if (filtering) m = static_cast<int>(readback.read(b.live_count.data(), st));
  if (m == 0) return ranked;

  ranked.grouped = in.group_ids != nullptr;
  if (ranked.grouped) {
    b.group_key_of_rank.resize(m, st);
    b.group_key_of_priority.resize(m, st);
    b.rank_sequence.resize(m, st);
    b.rank_of_priority.resize(m, st);
    group_keys_kernel<<<grid_for(m), 256, 0, st>>>(m, b.input_of_rank.data(), b.score_key_of_rank.data(), in.group_ids,
                                                   b.group_key_of_rank.data(), b.rank_sequence.data());
    S3D_CUDA_CHECK_LAUNCH();
    cub.run(
        [&](void* t, std::size_t& bytes) {
          return cub::DeviceRadixSort::SortPairs(t, bytes, b.group_key_of_rank.data(), b.group_key_of_priority.data(),
                                                 b.rank_sequence.data(), b.rank_of_priority.data(), m, 0, 64, st);
        },
        st);
    ranked.rank_of_priority = b.rank_of_priority.data();
    ranked.group_key_of_priority = b.group_key_of_priority.data();
  }

  if (prm.pre_top_k > 0 && prm.pre_top_k < m) {
    b.in_top_k.resize(m, st);
    b.top_k_counts.resize(2, st);
    find_segment_starts(m, ranked.group_key_of_priority, b.group_segments, cub, st);
    top_k_flags_kernel<<<grid_for(m), 256, 0, st>>>(m, b.group_segments.start.data(), prm.pre_top_k, b.in_top_k.data());
    S3D_CUDA_CHECK_LAUNCH();
    b.top_k_rank_of_priority.resize(m, st);
    if (!ranked.grouped) {  // the ranks themselves are the priority order
      cub.run(
          [&](void* t, std::size_t& bytes) {
            return cub::DeviceSelect::Flagged(t, bytes, thrust::counting_iterator<int>(0), b.in_top_k.data(),
                                              b.top_k_rank_of_priority.data(), b.top_k_counts.data(), m, st);
          },
          st);
    } else {
      b.top_k_group_key.resize(m, st);
      cub.run(
          [&](void* t, std::size_t& bytes) {
            return cub::DeviceSelect::Flagged(t, bytes, b.rank_of_priority.data(), b.in_top_k.data(),
                                              b.top_k_rank_of_priority.data(), b.top_k_counts.data(), m, st);
          },
          st);
      cub.run(
          [&](void* t, std::size_t& bytes) {
            return cub::DeviceSelect::Flagged(t, bytes, b.group_key_of_priority.data(), b.in_top_k.data(),
                                              b.top_k_group_key.data(), b.top_k_counts.data() + 1, m, st);
          },
          st);
      ranked.group_key_of_priority = b.top_k_group_key.data();
    }
    ranked.rank_of_priority = b.top_k_rank_of_priority.data();
    m = static_cast<int>(readback.read(b.top_k_counts.data(), st));
  }
  ranked.boxes = m;
  return ranked;
}

}  // namespace s3d::detection::detail
