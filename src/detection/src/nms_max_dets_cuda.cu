// max_dets: the first max_dets kept boxes of each image, in output order. The result is already in output
// order, so a stable sort by image gives each box its rank within its image.
#include <thrust/iterator/counting_iterator.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <utility>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

__global__ void clamp_count_kernel(std::int64_t* count, long long limit) {
  if (*count > limit) *count = limit;
}

__global__ void image_keys_kernel(int k, const std::int64_t* keep, const std::int64_t* images,
                                  unsigned long long* image_key, int* position_sequence) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= k) return;
  image_key[t] = images ? static_cast<unsigned long long>(images[keep[t]]) ^ 0x8000000000000000ull : 0ull;
  position_sequence[t] = t;
}

__global__ void rank_in_image_kernel(int k, const int* segment_start, const int* position_of_sorted, long long max_dets,
                                     unsigned char* selected) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= k) return;
  selected[position_of_sorted[t]] = (t - segment_start[t]) < max_dets ? 1 : 0;
}

__global__ void gather_selected_kernel(const int* count, const int* selected_position, const std::int64_t* keep_in,
                                       const float* score_in, std::int64_t* keep_out, float* score_out,
                                       std::int64_t* count_out) {
  const int n = *count;
  for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
    keep_out[k] = keep_in[selected_position[k]];
    score_out[k] = score_in[selected_position[k]];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = n;
}

}  // namespace

void apply_max_dets(const NmsInput& in, const NmsParams& prm, MaxDetsBuffers& b, CubScratch& cub,
                    HostReadback& readback, DeviceResult& result, StreamHandle st) {
  if (!in.image_ids) {
    clamp_count_kernel<<<1, 1, 0, st>>>(result.count.data(), prm.max_dets);
    S3D_CUDA_CHECK_LAUNCH();
    return;
  }
  const long long kept = readback.read(reinterpret_cast<const long long*>(result.count.data()), st);
  if (kept <= prm.max_dets) return;
  const int k = static_cast<int>(kept);
  b.image_key.resize(k, st);
  b.sorted_image_key.resize(k, st);
  b.position_sequence.resize(k, st);
  b.position_of_sorted.resize(k, st);
  b.selected.resize(k, st);
  b.selected_position.resize(k, st);
  b.selected_count.resize(1, st);
  b.compacted_keep.resize(k, st);
  b.compacted_scores.resize(k, st);
  image_keys_kernel<<<grid_for(k), 256, 0, st>>>(k, result.keep.data(), in.image_ids, b.image_key.data(),
                                                 b.position_sequence.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(t, bytes, b.image_key.data(), b.sorted_image_key.data(),
                                               b.position_sequence.data(), b.position_of_sorted.data(), k, 0, 64, st);
      },
      st);
  find_segment_starts(k, b.sorted_image_key.data(), b.image_segments, cub, st);
  rank_in_image_kernel<<<grid_for(k), 256, 0, st>>>(k, b.image_segments.start.data(), b.position_of_sorted.data(),
                                                    prm.max_dets, b.selected.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceSelect::Flagged(t, bytes, thrust::counting_iterator<int>(0), b.selected.data(),
                                          b.selected_position.data(), b.selected_count.data(), k, st);
      },
      st);
  gather_selected_kernel<<<grid_for(k), 256, 0, st>>>(b.selected_count.data(), b.selected_position.data(),
                                                      result.keep.data(), result.scores.data(), b.compacted_keep.data(),
                                                      b.compacted_scores.data(), result.count.data());
  S3D_CUDA_CHECK_LAUNCH();
  std::swap(result.keep, b.compacted_keep);
  std::swap(result.scores, b.compacted_scores);
}

}  // namespace s3d::detection::detail
