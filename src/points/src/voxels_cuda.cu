// VoxelEngine, CUDA backend. A bounded max_points_per_voxel takes the hash-based fast path (voxels_hash.cuh);
// otherwise (unlimited or large max_points_per_voxel) the sort-based path here: a 64-bit linear key per point, a CUB
// radix sort of (key, index) (stable, so each run of a key lists its points by input index), run-length encoding into
// voxels, the keep rules as scans, then one thread per voxel aggregating its points sequentially with voxel_math.hpp —
// the same loop in the same order as the CPU backend, so both give the same bytes. The run and voxel counts stay on the
// device (every pass after the sort covers n slots, the ones past the last run empty; outputs are sized for n voxels),
// so a call waits on the host once, at the end.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"
#include "voxels_hash.cuh"
#include "voxels_impl.hpp"
#include "voxels_summary_cuda.cuh"

namespace s3d::points::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long n) {
  return static_cast<unsigned>(std::max<long long>(1, (n + kThreads - 1) / kThreads));
}

__global__ void keys_kernel(const float* __restrict__ xyz, const std::int32_t* __restrict__ batch, long long n,
                            VoxelGrid grid, unsigned long long* __restrict__ keys, std::int32_t* __restrict__ index) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  keys[i] = voxel_key(grid, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], batch ? batch[i] : 0);
  index[i] = static_cast<std::int32_t>(i);
}

// tally[]: what the device knows and the host reads once at the end.
enum : int { kTallyRuns = 0, kTallyOutOfRange = 1, kTallyVoxels = 2, kTallyCount = 4 };

/// The dropped points, if any, form the last run (the sentinel sorts after every voxel): count them, zero that
/// run's length (so the scans skip it) and store the voxel run count.
__global__ void tail_kernel(const int* __restrict__ encoded, const unsigned long long* __restrict__ unique,
                            std::int32_t* lengths, unsigned long long sentinel, long long* tally) {
  const int runs = *encoded;
  const bool dropped = runs > 0 && unique[runs - 1] == sentinel;
  tally[kTallyRuns] = dropped ? runs - 1 : runs;
  tally[kTallyOutOfRange] = dropped ? lengths[runs - 1] : 0;
  if (dropped) lengths[runs - 1] = 0;
}

/// first[r]: the input index of run r's first point when the run has at least min_points points, else INT_MAX
/// (also past the last run).
__global__ void first_kernel(long long n, const long long* __restrict__ tally, const std::int32_t* __restrict__ offsets,
                             const std::int32_t* __restrict__ lengths, const std::int32_t* __restrict__ sorted_index,
                             int min_points, std::int32_t* __restrict__ first) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  first[r] = r < tally[kTallyRuns] && lengths[r] >= min_points ? sorted_index[offsets[r]] : INT_MAX;
}

/// kept[r]: run r is a voxel (first index at most the max_voxels-th smallest, `nth`; null = no limit).
__global__ void kept_kernel(long long n, const long long* __restrict__ tally, const std::int32_t* __restrict__ first,
                            const std::int32_t* __restrict__ nth, std::int32_t* __restrict__ kept) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  const std::int32_t threshold = nth != nullptr && *nth != INT_MAX ? *nth : INT_MAX - 1;
  kept[r] = r < tally[kTallyRuns] && first[r] <= threshold ? 1 : 0;
}

__global__ void voxel_count_kernel(const std::int32_t* __restrict__ voxel_id, const std::int32_t* __restrict__ kept,
                                   long long* tally) {
  const long long runs = tally[kTallyRuns];
  tally[kTallyVoxels] = runs > 0 ? voxel_id[runs - 1] + kept[runs - 1] : 0;
}

struct VoxelOutputs {
  std::int32_t* coords;
  std::int32_t* points_per_voxel;
  std::int32_t* representative;
  float* xyz;
  std::int32_t* point_voxel;
  unsigned long long* dropped;  // [0] over max points, [1] over max voxels / under min points
};

__global__ void voxel_kernel(const long long* __restrict__ tally, VoxelGrid grid,
                             const unsigned long long* __restrict__ keys, const std::int32_t* __restrict__ offsets,
                             const std::int32_t* __restrict__ lengths, const std::int32_t* __restrict__ sorted_index,
                             const std::int32_t* __restrict__ kept, const std::int32_t* __restrict__ voxel_id,
                             const float* __restrict__ xyz, int max_points, int aggregate, VoxelOutputs out) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= tally[kTallyRuns]) return;
  const int length = lengths[r];
  const int count = max_points > 0 && length > max_points ? max_points : length;
  if (length > count) atomicAdd(out.dropped, static_cast<unsigned long long>(length - count));
  if (!kept[r]) {
    atomicAdd(out.dropped + 1, static_cast<unsigned long long>(count));
    return;
  }
  const long long v = voxel_id[r];
  const std::int32_t* members = sorted_index + offsets[r];
  for (int j = 0; j < count; ++j) out.point_voxel[members[j]] = static_cast<std::int32_t>(v);
  voxel_coords(grid, keys[r], out.coords + 4 * v);
  out.points_per_voxel[v] = count;
  aggregate_voxel(grid, keys[r], members, count, xyz, aggregate, out.xyz + 3 * v, out.representative + v);
}

class CudaVoxels final : public VoxelEngine::Impl {
 public:
  explicit CudaVoxels(const Device& device) : Impl(device) {
    s3d::detail::require_kernel_image(reinterpret_cast<const void*>(&voxel_kernel));
  }

  ~CudaVoxels() override {
    try {
      stream_.synchronize();  // buffers are released on stream_, after the last kernel that used them
    } catch (...) {
    }
  }

  void run_host(const VoxelRequest& r, Voxels& out) override {
    ScopedDevice on(device_.index());
    const long long n = static_cast<long long>(r.points.size);
    xyz_.copy_from_host_async(r.points.xyz, static_cast<std::size_t>(3 * n), stream_);
    if (r.batch) batch_.copy_from_host_async(r.batch, static_cast<std::size_t>(n), stream_);
    const DeviceVoxels d = run(r, xyz_.data(), r.batch ? batch_.data() : nullptr);
    const std::size_t m = static_cast<std::size_t>(d.count);
    out.count = d.count;
    out.coords.resize(4 * m);
    out.points_per_voxel.resize(m);
    out.representative.resize(m);
    out.xyz.resize(3 * m);
    out.point_voxel.resize(static_cast<std::size_t>(n));
    // From d's pointers: the fast path's buffers or this path's.
    const auto download = [&](void* host, const void* device, std::size_t bytes) {
      if (bytes) S3D_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
    };
    download(out.coords.data(), d.coords, 4 * m * sizeof(std::int32_t));
    download(out.points_per_voxel.data(), d.points_per_voxel, m * sizeof(std::int32_t));
    download(out.representative.data(), d.representative, m * sizeof(std::int32_t));
    download(out.xyz.data(), d.xyz, 3 * m * sizeof(float));
    download(out.point_voxel.data(), d.point_voxel, static_cast<std::size_t>(n) * sizeof(std::int32_t));
    stream_.synchronize();
    out.dropped_out_of_range = d.dropped_out_of_range;
    out.dropped_over_max_points = d.dropped_over_max_points;
    out.dropped_over_max_voxels = d.dropped_over_max_voxels;
  }

  DeviceVoxels run_device(const VoxelRequest& r) override {
    ScopedDevice on(device_.index());
    return run(r, r.points.xyz, r.batch);
  }

  CloudSummary summarize_device(PointsView<const float> points, const std::int32_t* batch) override {
    ScopedDevice on(device_.index());
    return summarizer_.run(points.xyz, batch, static_cast<long long>(points.size), stream_);
  }

 private:
  /// Voxelises device-memory points into the engine's buffers; the counts come back to the host.
  DeviceVoxels run(const VoxelRequest& r, const float* xyz, const std::int32_t* batch) {
    if (HashVoxels::applies(r)) return hash_.run(r, xyz, batch, stream_);
    DeviceVoxels out;
    const long long n = static_cast<long long>(r.points.size);
    const int items = static_cast<int>(n);
    int key_bits = 1;
    while (key_bits < 64 && (1ULL << key_bits) <= r.grid.sentinel) ++key_bits;

    keys_.resize(static_cast<std::size_t>(2 * n), stream_);
    index_.resize(static_cast<std::size_t>(2 * n), stream_);
    unique_.resize(static_cast<std::size_t>(n), stream_);
    lengths_.resize(static_cast<std::size_t>(n), stream_);
    offsets_.resize(static_cast<std::size_t>(n), stream_);
    first_.resize(static_cast<std::size_t>(2 * n), stream_);
    kept_.resize(static_cast<std::size_t>(n), stream_);
    voxel_id_.resize(static_cast<std::size_t>(n), stream_);
    runs_.resize(1, stream_);
    tally_.resize(kTallyCount, stream_);
    dropped_.resize(2, stream_);
    point_voxel_.resize(static_cast<std::size_t>(n), stream_);
    unsigned long long* keys = keys_.data();
    std::int32_t* index = index_.data();
    std::int32_t* first = first_.data();

    std::size_t bytes = 0, need = 0;
    S3D_CUDA_CHECK(
        cub::DeviceRadixSort::SortPairs(nullptr, need, keys, keys + n, index, index + n, items, 0, key_bits, stream_));
    bytes = std::max(bytes, need);
    S3D_CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, need, keys + n, unique_.data(), lengths_.data(),
                                                      runs_.data(), items, stream_));
    bytes = std::max(bytes, need);
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, need, lengths_.data(), offsets_.data(), items, stream_));
    bytes = std::max(bytes, need);
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, need, first, first + n, items, 0, 31, stream_));
    bytes = std::max(bytes, need);
    scratch_.resize(std::max<std::size_t>(bytes, 1), stream_);

    S3D_CUDA_CHECK(cudaMemsetAsync(lengths_.data(), 0, static_cast<std::size_t>(n) * sizeof(std::int32_t), stream_));
    keys_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(xyz, batch, n, r.grid, keys, index);
    S3D_CUDA_CHECK_LAUNCH();
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch_.data(), bytes, keys, keys + n, index, index + n, items, 0,
                                                   key_bits, stream_));
    const std::int32_t* sorted_index = index + n;
    S3D_CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(scratch_.data(), bytes, keys + n, unique_.data(), lengths_.data(),
                                                      runs_.data(), items, stream_));
    long long* tally = tally_.data();
    tail_kernel<<<1, 1, 0, stream_>>>(runs_.data(), unique_.data(), lengths_.data(), r.grid.sentinel, tally);
    S3D_CUDA_CHECK_LAUNCH();
    // Every later pass covers n slots (the run count stays on the device); slots past the last run are empty.
    S3D_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(scratch_.data(), bytes, lengths_.data(), offsets_.data(), items, stream_));
    first_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, tally, offsets_.data(), lengths_.data(), sorted_index,
                                                          r.min_points_per_voxel, first);
    S3D_CUDA_CHECK_LAUNCH();
    // max_voxels: keep the runs whose first index is among the max_voxels smallest (first indices differ).
    const std::int32_t* nth = nullptr;
    if (r.max_voxels > 0 && r.max_voxels < n) {
      S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(scratch_.data(), bytes, first, first + n, items, 0, 31, stream_));
      nth = first + n + r.max_voxels - 1;
    }
    kept_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, tally, first, nth, kept_.data());
    S3D_CUDA_CHECK_LAUNCH();
    S3D_CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(scratch_.data(), bytes, kept_.data(), voxel_id_.data(), items, stream_));
    voxel_count_kernel<<<1, 1, 0, stream_>>>(voxel_id_.data(), kept_.data(), tally);
    S3D_CUDA_CHECK_LAUNCH();

    // Outputs sized for the most voxels there can be, so that nothing waits for the count.
    const std::size_t m_most = static_cast<std::size_t>(n);
    coords_.resize(4 * m_most, stream_);
    per_voxel_.resize(m_most, stream_);
    representative_.resize(m_most, stream_);
    out_xyz_.resize(3 * m_most, stream_);
    S3D_CUDA_CHECK(
        cudaMemsetAsync(point_voxel_.data(), 0xff, static_cast<std::size_t>(n) * sizeof(std::int32_t), stream_));
    dropped_.fill_zero_async(stream_);
    const VoxelOutputs outputs{coords_.data(),  per_voxel_.data(),   representative_.data(),
                               out_xyz_.data(), point_voxel_.data(), dropped_.data()};
    voxel_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(tally, r.grid, unique_.data(), offsets_.data(),
                                                          lengths_.data(), sorted_index, kept_.data(), voxel_id_.data(),
                                                          xyz, r.max_points_per_voxel, r.aggregate, outputs);
    S3D_CUDA_CHECK_LAUNCH();
    long long counts[kTallyCount] = {0, 0, 0, 0};
    tally_.copy_to_host_async(counts, kTallyCount, stream_);
    unsigned long long dropped[2] = {0, 0};
    dropped_.copy_to_host_async(dropped, 2, stream_);
    stream_.synchronize();
    out.count = counts[kTallyVoxels];
    out.dropped_out_of_range = counts[kTallyOutOfRange];
    out.dropped_over_max_points = static_cast<std::int64_t>(dropped[0]);
    out.dropped_over_max_voxels = static_cast<std::int64_t>(dropped[1]);
    out.coords = coords_.data();
    out.point_voxel = point_voxel_.data();
    out.points_per_voxel = per_voxel_.data();
    out.representative = representative_.data();
    out.xyz = out_xyz_.data();
    return out;
  }

  Stream stream_;
  HashVoxels hash_;
  CloudSummarizer summarizer_;
  DeviceBuffer<float> xyz_, out_xyz_;
  DeviceBuffer<std::int32_t> batch_, index_, lengths_, offsets_, first_, kept_, voxel_id_, runs_, point_voxel_;
  DeviceBuffer<std::int32_t> coords_, per_voxel_, representative_;
  DeviceBuffer<unsigned long long> keys_, unique_, dropped_;
  DeviceBuffer<long long> tally_;
  DeviceBuffer<unsigned char> scratch_;
};

}  // namespace

std::unique_ptr<VoxelEngine::Impl> make_cuda_voxels(const Device& device) {
  return std::make_unique<CudaVoxels>(device);
}

}  // namespace s3d::points::detail
