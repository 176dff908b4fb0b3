// FpsEngine, CUDA backend. Each cloud of a batch gets one or more thread blocks; each thread keeps its points
// and their running distances in registers (or, for clouds too large for that, in global scratch). A step
// updates the distances and reduces the (distance, index) key over the block; with several blocks per cloud
// the blocks meet in one 64-bit atomicMax and a grid-wide barrier (cooperative launch), so one large cloud
// uses every SM rather than one block as in the published kernels.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "fps_impl.hpp"
#include "point_math.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"

namespace s3d::points::detail {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxPointsPerThread = 8;  // registers: 4 floats per point

/// One cloud of the launch (device table).
struct FpsCloud {
  long long point_offset;  // first point in the batch
  long long out_offset;    // first output slot
  int n;                   // points
  int m;                   // samples
  int start;               // first pick
  int blocks;              // blocks working on it
};

/// The block's cloud and its rank among that cloud's blocks.
struct FpsBlock {
  int cloud;
  int rank;
};

__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Max of `v` over the block; every thread gets it. `scratch` holds kWarps + 1 values.
__device__ __forceinline__ unsigned long long block_max(unsigned long long v, unsigned long long* scratch) {
  v = warp_max(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    unsigned long long w = lane < kWarps ? scratch[lane] : 0ull;
    w = warp_max(w);
    if (lane == 0) scratch[kWarps] = w;
  }
  __syncthreads();
  return scratch[kWarps];
}

/// PPT > 0: each thread owns PPT points (registers). PPT == 0: each thread walks its share of the block's
/// chunk with distances in `scratch_distance` (global). kCooperative: several blocks per cloud.
template <int PPT, bool kCooperative>
__global__ void __launch_bounds__(kThreads)
    fps_kernel(const float* __restrict__ xyz, const FpsCloud* __restrict__ clouds, const FpsBlock* __restrict__ blocks,
               unsigned long long* __restrict__ slots, float* __restrict__ scratch_distance, int* __restrict__ out,
               int max_steps) {
  __shared__ unsigned long long reduce_scratch[kWarps + 1];
  const FpsBlock task = blocks[blockIdx.x];
  const FpsCloud c = clouds[task.cloud];
  const float* p = xyz + 3 * c.point_offset;
  const bool leader = task.rank == 0 && threadIdx.x == 0;
  if (leader && c.m > 0) out[c.out_offset] = c.start;

  constexpr int kRegs = PPT > 0 ? PPT : 1;
  float px[kRegs], py[kRegs], pz[kRegs], d[kRegs];
  long long chunk_begin = 0, chunk_end = 0;
  if constexpr (PPT > 0) {
#pragma unroll
    for (int j = 0; j < PPT; ++j) {
      const long long i = (static_cast<long long>(task.rank) * PPT + j) * kThreads + threadIdx.x;
      const bool valid = i < c.n;
      px[j] = valid ? p[3 * i] : 0.f;
      py[j] = valid ? p[3 * i + 1] : 0.f;
      pz[j] = valid ? p[3 * i + 2] : 0.f;
      d[j] = __int_as_float(0x7f800000);  // +inf
    }
  } else {
    const long long chunk = (c.n + c.blocks - 1) / c.blocks;
    chunk_begin = task.rank * chunk;
    chunk_end = min(static_cast<long long>(c.n), chunk_begin + chunk);
    for (long long i = chunk_begin + threadIdx.x; i < chunk_end; i += kThreads)
      scratch_distance[c.point_offset + i] = __int_as_float(0x7f800000);
  }

  int last = c.start;
  for (int s = 1; s < max_steps; ++s) {
    const bool active = s < c.m;
    unsigned long long key = 0;
    if (active) {
      const float lx = p[3 * last], ly = p[3 * last + 1], lz = p[3 * last + 2];
      if constexpr (PPT > 0) {
#pragma unroll
        for (int j = 0; j < PPT; ++j) {
          const long long i = (static_cast<long long>(task.rank) * PPT + j) * kThreads + threadIdx.x;
          if (i < c.n) {
            d[j] = fminf(d[j], squared_distance(px[j], py[j], pz[j], lx, ly, lz));
            key = max(key, fps_key(d[j], static_cast<unsigned>(i)));
          }
        }
      } else {
        for (long long i = chunk_begin + threadIdx.x; i < chunk_end; i += kThreads) {
          float* di = scratch_distance + c.point_offset + i;
          const float v = fminf(*di, squared_distance(p[3 * i], p[3 * i + 1], p[3 * i + 2], lx, ly, lz));
          *di = v;
          key = max(key, fps_key(v, static_cast<unsigned>(i)));
        }
      }
    }
    key = block_max(key, reduce_scratch);
    if constexpr (kCooperative) {
      unsigned long long* slot = slots + 3 * task.cloud;
      if (threadIdx.x == 0) {
        if (active) atomicMax(slot + s % 3, key);
        // The slot of step s+1 was last read after the barrier of step s-2: everyone is past that read.
        if (task.rank == 0) slot[(s + 1) % 3] = 0;
      }
      cg::this_grid().sync();
      if (active) key = __ldcg(slot + s % 3);
    }
    if (active) {
      last = static_cast<int>(fps_key_index(key));
      if (leader) out[c.out_offset + s] = last;
    }
  }
}

template <bool kCooperative>
void* kernel_for(int ppt) {
  switch (ppt) {
    case 1:
      return reinterpret_cast<void*>(&fps_kernel<1, kCooperative>);
    case 2:
      return reinterpret_cast<void*>(&fps_kernel<2, kCooperative>);
    case 4:
      return reinterpret_cast<void*>(&fps_kernel<4, kCooperative>);
    case 8:
      return reinterpret_cast<void*>(&fps_kernel<8, kCooperative>);
    default:
      return reinterpret_cast<void*>(&fps_kernel<0, kCooperative>);
  }
}

/// Points per thread for `per_block` points: the next power of two up to the register limit, else 0 (global).
int points_per_thread(long long per_block) {
  const long long per_thread = (per_block + kThreads - 1) / kThreads;
  for (int ppt = 1; ppt <= kMaxPointsPerThread; ppt *= 2)
    if (per_thread <= ppt) return ppt;
  return 0;
}

class CudaFps final : public FpsEngine::Impl {
 public:
  explicit CudaFps(const Device& device) : Impl(device) {
    ScopedDevice on(device.index());
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device.index()));
    int cooperative = 0;
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device.index()));
    cooperative_ = cooperative != 0;
    require_kernel_image(reinterpret_cast<const void*>(&fps_kernel<1, true>));
  }

  ~CudaFps() override {
    try {
      work_done_.synchronize();  // the buffers are released on stream_, after the last kernel that used them
    } catch (...) {
    }
  }

  std::vector<std::int32_t> run_host(const FpsBatch& batch) override {
    ScopedDevice on(device_.index());
    std::int64_t points = 0;
    for (std::int64_t n : batch.lengths) points += n;
    host_points_.resize(static_cast<std::size_t>(points) * 3);
    std::copy(batch.xyz, batch.xyz + 3 * points, host_points_.data());
    device_points_.resize(host_points_.size(), stream_);
    device_points_.copy_from_host_async(host_points_.data(), host_points_.size(), stream_);
    FpsBatch on_device = batch;
    on_device.xyz = device_points_.data();
    const std::int64_t total = batch.total_samples();
    device_out_.resize(static_cast<std::size_t>(std::max<std::int64_t>(total, 1)), stream_);
    run_device_async(on_device, device_out_.data(), stream_);
    std::vector<std::int32_t> out(static_cast<std::size_t>(total));
    if (total > 0) device_out_.copy_to_host_async(out.data(), out.size(), stream_);
    stream_.synchronize();
    return out;
  }

  void run_device_async(const FpsBatch& batch, std::int32_t* device_out, StreamHandle stream) override {
    ScopedDevice on(device_.index());
    const int clouds = static_cast<int>(batch.lengths.size());
    std::int64_t total_points = 0;
    int max_steps = 0;
    for (int b = 0; b < clouds; ++b) {
      total_points += batch.lengths[b];
      max_steps = std::max(max_steps, static_cast<int>(batch.samples[b]));
    }

    // Blocks per cloud: one each when the clouds fill the GPU (no grid barrier needed), else as many as the
    // GPU holds at once, shared in proportion to the clouds' sizes. Occupancy depends on the variant (points
    // per thread), which depends on the blocks: settle both in a few rounds.
    bool cooperative = false;
    if (cooperative_ && clouds < sm_count_) {
      int ppt = 1;
      for (int round = 0; round < 3 && !cooperative; ++round) {
        int per_sm = 0;
        S3D_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_for<true>(ppt), kThreads, 0));
        const long long resident = static_cast<long long>(per_sm) * sm_count_;
        if (resident < clouds) break;
        layout(batch, resident, total_points);
        const int needed = points_per_thread(max_points_per_block());
        if (needed == ppt) cooperative = true;
        ppt = needed;
      }
    }
    if (!cooperative) layout(batch, clouds, total_points);
    const int ppt = points_per_thread(max_points_per_block());

    // Scratch lives on the engine's stream (released there at destruction); the caller's stream waits for it.
    upload_done_.synchronize();  // the pinned tables of the previous call have been read
    const std::size_t cloud_bytes = table_.size() * sizeof(FpsCloud);
    const std::size_t table_bytes = cloud_bytes + blocks_.size() * sizeof(FpsBlock);
    staging_.resize(table_bytes);
    std::memcpy(staging_.data(), table_.data(), cloud_bytes);
    std::memcpy(staging_.data() + cloud_bytes, blocks_.data(), blocks_.size() * sizeof(FpsBlock));
    device_tables_.resize(table_bytes, stream_);
    slots_.resize(static_cast<std::size_t>(3) * clouds, stream_);
    float* distance = nullptr;
    if (ppt == 0) {
      distance_.resize(static_cast<std::size_t>(total_points), stream_);
      distance = distance_.data();
    }
    allocated_.record(stream_);
    allocated_.wait(stream);
    device_tables_.copy_from_host_async(staging_.data(), table_bytes, stream);
    upload_done_.record(stream);
    slots_.fill_zero_async(stream);
    const auto* d_clouds = reinterpret_cast<const FpsCloud*>(device_tables_.data());
    const auto* d_blocks = reinterpret_cast<const FpsBlock*>(device_tables_.data() + cloud_bytes);

    const float* xyz = batch.xyz;
    unsigned long long* slots = slots_.data();
    int* out = device_out;
    void* args[] = {&xyz, &d_clouds, &d_blocks, &slots, &distance, &out, &max_steps};
    const unsigned grid = static_cast<unsigned>(blocks_.size());
    if (cooperative) {
      S3D_CUDA_CHECK(cudaLaunchCooperativeKernel(kernel_for<true>(ppt), dim3(grid), dim3(kThreads), args, 0, stream));
    } else {
      S3D_CUDA_CHECK(cudaLaunchKernel(kernel_for<false>(ppt), dim3(grid), dim3(kThreads), args, 0, stream));
    }
    S3D_CUDA_CHECK_LAUNCH();
    work_done_.record(stream);
  }

 private:
  long long max_points_per_block() const {
    long long most = 0;
    for (const FpsCloud& c : table_) most = std::max(most, (static_cast<long long>(c.n) + c.blocks - 1) / c.blocks);
    return most;
  }

  /// Fills table_ and blocks_ with `budget` blocks shared among the clouds (at least one each).
  void layout(const FpsBatch& batch, long long budget, std::int64_t total_points) {
    const int clouds = static_cast<int>(batch.lengths.size());
    table_.assign(static_cast<std::size_t>(clouds), FpsCloud{});
    blocks_.clear();
    long long point_offset = 0, out_offset = 0;
    for (int b = 0; b < clouds; ++b) {
      FpsCloud& c = table_[b];
      c.point_offset = point_offset;
      c.out_offset = out_offset;
      c.n = static_cast<int>(batch.lengths[b]);
      c.m = static_cast<int>(batch.samples[b]);
      c.start = batch.starts.empty() ? 0 : static_cast<int>(batch.starts[b]);
      // One block each, the rest in proportion to size: never more than `budget` in all.
      const long long share = 1 + (budget - clouds) * batch.lengths[b] / std::max<std::int64_t>(total_points, 1);
      const long long useful = (batch.lengths[b] + kThreads - 1) / kThreads;  // no block without a point
      c.blocks = static_cast<int>(std::max(1LL, std::min(share, useful)));
      for (int r = 0; r < c.blocks; ++r) blocks_.push_back(FpsBlock{b, r});
      point_offset += batch.lengths[b];
      out_offset += batch.samples[b];
    }
  }

  int sm_count_ = 0;
  bool cooperative_ = false;
  Stream stream_;
  Event allocated_, upload_done_, work_done_;
  std::vector<FpsCloud> table_;
  std::vector<FpsBlock> blocks_;
  PinnedBuffer<unsigned char> staging_;
  PinnedBuffer<float> host_points_;
  DeviceBuffer<unsigned char> device_tables_;
  DeviceBuffer<unsigned long long> slots_;
  DeviceBuffer<float> distance_;
  DeviceBuffer<float> device_points_;
  DeviceBuffer<std::int32_t> device_out_;
};

}  // namespace

std::unique_ptr<FpsEngine::Impl> make_cuda_fps(const Device& device) { return std::make_unique<CudaFps>(device); }

}  // namespace s3d::points::detail
