// Segments of a sorted key list (groups in priority order, images in output order): where each run of equal
// keys starts, and the group index and [start, end) range of every group.
#include <cub/device/device_scan.cuh>

#include "nms_stages_cuda.cuh"

namespace s3d::detection::detail {
namespace {

/// head[p] = 1 where a new segment starts. `keys` may be null (one segment).
__global__ void head_flags_kernel(int m, const unsigned long long* keys, int* head, int* head_position) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  const int h = (p == 0 || (keys && keys[p] != keys[p - 1])) ? 1 : 0;
  head[p] = h;
  if (head_position) head_position[p] = h ? p : 0;
}

__global__ void decrement_kernel(int m, int* v) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < m) v[p] -= 1;
}

__global__ void group_bounds_kernel(int m, const int* head, const int* group_of_box, int* group_start, int* group_end) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= m) return;
  if (head[p]) {
    group_start[group_of_box[p]] = p;
    if (p > 0) group_end[group_of_box[p - 1]] = p;
  }
  if (p == m - 1) group_end[group_of_box[p]] = m;
}

__global__ void one_group_kernel(int m, int* group_start, int* group_end) {
  group_start[0] = 0;
  group_end[0] = m;
}

}  // namespace

void find_segment_starts(int count, const unsigned long long* keys, SegmentStarts& out, CubScratch& cub,
                         StreamHandle st) {
  out.head.resize(count, st);
  out.head_position.resize(count, st);
  out.start.resize(count, st);
  head_flags_kernel<<<grid_for(count), 256, 0, st>>>(count, keys, out.head.data(), out.head_position.data());
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceScan::InclusiveScan(t, bytes, out.head_position.data(), out.start.data(), MaxOp(), count, st);
      },
      st);
}

void find_groups(int count, const unsigned long long* keys, GroupRanges& out, CubScratch& cub, StreamHandle st) {
  out.head.resize(count, st);
  out.group_of_box.resize(count, st);
  out.group_start.resize(count, st);
  out.group_end.resize(count, st);
  head_flags_kernel<<<grid_for(count), 256, 0, st>>>(count, keys, out.head.data(), nullptr);
  S3D_CUDA_CHECK_LAUNCH();
  cub.run(
      [&](void* t, std::size_t& bytes) {
        return cub::DeviceScan::InclusiveSum(t, bytes, out.head.data(), out.group_of_box.data(), count, st);
      },
      st);
  decrement_kernel<<<grid_for(count), 256, 0, st>>>(count, out.group_of_box.data());
  S3D_CUDA_CHECK_LAUNCH();
  group_bounds_kernel<<<grid_for(count), 256, 0, st>>>(count, out.head.data(), out.group_of_box.data(),
                                                       out.group_start.data(), out.group_end.data());
  S3D_CUDA_CHECK_LAUNCH();
}

void single_group(int count, GroupRanges& out, StreamHandle st) {
  out.group_start.resize(count, st);
  out.group_end.resize(count, st);
  one_group_kernel<<<1, 1, 0, st>>>(count, out.group_start.data(), out.group_end.data());
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::detection::detail
