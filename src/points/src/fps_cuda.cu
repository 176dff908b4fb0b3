// FpsEngine, CUDA backend. Each cloud of a batch gets one or more thread blocks; each thread keeps its points
// and their running distances in registers (or, for clouds too large for that, in global scratch). A step
// updates the distances and reduces the (distance, index) key over the block; with several blocks per cloud
// the blocks meet in one 64-bit atomicMax and a grid-wide barrier (cooperative launch), so one large cloud
// uses every SM rather than one block as in the published kernels. On sm_90 a cloud of up to 2^17 points runs
// as one thread-block cluster instead (fps_cluster_kernel): 2 to 8 blocks for up to 32,768 points, 8 or 16 blocks
// with 16 points a thread for up to 131,072, so that a batch of such clouds keeps several of them in flight.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "cluster_messages.cuh"
#include "fps_impl.hpp"
#include "point_math.hpp"
#include "s3d/core/cuda_arch.cuh"
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
constexpr int kPortableCluster = 8;     // the portable cluster size limit
// Mid-size clouds (more than kPortableCluster * kThreads * kMaxPointsPerThread = 32,768 points): clusters of 8 or
// 16 blocks (16 is non-portable: allowed per kernel, and used only when cudaOccupancyMaxActiveClusters says one
// fits) whose threads own 16 points each: distances in registers, coordinates in shared memory (SharedPoints:
// 96 KiB a block), so that a block takes <= 64 registers a thread and two blocks share an SM. With all 16 points
// in registers (106 registers, one block an SM) an H200 held 7 clusters of 16 and each SM idled while its block
// waited for the step's exchange; two blocks an SM hold 14, one block's exchange overlapping the other's points.
constexpr int kMaxCluster = 16;          // message buffers are sized for it
constexpr int kMidPointsPerThread = 16;  // the cluster kernel only; fps_kernel stays at kMaxPointsPerThread
constexpr long long kMaxClusterPoints = 1LL * kMaxCluster * kThreads * kMidPointsPerThread;  // 131,072

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

__device__ __forceinline__ unsigned long long device_key(float distance, long long index) {
  return static_cast<unsigned long long>(fps_key(distance, static_cast<std::uint32_t>(index)));
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

/// The points one thread owns and their running distances. PPT > 0: PPT points in registers, strided by the
/// block size inside the block's chunk (coalesced loads). PPT == 0: the thread walks its share of the block's
/// chunk with the distances in global scratch (clouds too large for registers).
template <int PPT>
struct ThreadPoints {
  static constexpr int kRegs = PPT > 0 ? PPT : 1;
  const float* p;
  float* distance;  // PPT == 0: the cloud's scratch distances
  long long first, end, n;
  float px[kRegs], py[kRegs], pz[kRegs], d[kRegs];

  __device__ void load(const float* cloud, float* cloud_distance, long long cloud_n, int rank, int blocks) {
    p = cloud;
    distance = cloud_distance;
    n = cloud_n;
    if constexpr (PPT > 0) {
      first = static_cast<long long>(rank) * PPT * kThreads + threadIdx.x;
#pragma unroll
      for (int j = 0; j < PPT; ++j) {
        const long long i = first + static_cast<long long>(j) * kThreads;
        const bool valid = i < n;
        px[j] = valid ? p[3 * i] : 0.f;
        py[j] = valid ? p[3 * i + 1] : 0.f;
        pz[j] = valid ? p[3 * i + 2] : 0.f;
        d[j] = valid ? __int_as_float(0x7f800000) : -1.0f;  // +inf; a slot past the end never wins
      }
    } else {
      const long long chunk = (n + blocks - 1) / blocks;
      first = rank * chunk;
      end = min(n, first + chunk);
      for (long long i = first + threadIdx.x; i < end; i += kThreads) distance[i] = __int_as_float(0x7f800000);
    }
  }

  /// d = min(d, |p - l|^2) for every owned point; returns the largest key among them (0 when none).
  __device__ unsigned long long update(float lx, float ly, float lz) {
    float4 unused;
    return update(lx, ly, lz, unused);
  }
  /// The same, and the coordinates of the point with the largest key in `best` (registers only).
  __device__ unsigned long long update(float lx, float ly, float lz, float4& best) {
    unsigned long long key = 0;
    if constexpr (PPT > 0) {
      // The arg-max in float, the 64-bit key made once: a point costs a distance, a min, a compare and selects.
      float best_d = -1.0f;
      int best_j = 0;
#pragma unroll
      for (int j = 0; j < PPT; ++j) {
        d[j] = fminf(d[j], squared_distance(px[j], py[j], pz[j], lx, ly, lz));
        // Strictly greater: of equal distances the smaller j, which is the smaller index, stays.
        if (d[j] > best_d) best_d = d[j], best_j = j, best = make_float4(px[j], py[j], pz[j], 0.f);
      }
      if (best_d >= 0.0f) key = device_key(best_d, first + static_cast<long long>(best_j) * kThreads);
    } else {
      for (long long i = first + threadIdx.x; i < end; i += kThreads) {
        const float v = fminf(distance[i], squared_distance(p[3 * i], p[3 * i + 1], p[3 * i + 2], lx, ly, lz));
        distance[i] = v;
        key = max(key, device_key(v, i));
      }
    }
    return key;
  }
};

/// The cluster kernel's points for mid-size clouds: PPT points a thread, coordinates in shared memory (x, y and z
/// planes of PPT * kThreads floats, point j of a thread at j * kThreads + threadIdx.x: conflict-free), distances
/// in registers. The winner's coordinates are read back from shared memory by its slot (no selects a point).
template <int PPT>
struct SharedPoints {
  static constexpr std::size_t kBytes = 3 * sizeof(float) * PPT * kThreads;
  const float* sx;
  long long first;
  float d[PPT];

  __device__ void load(const float* cloud, float* planes, long long n, int rank) {
    sx = planes;
    first = static_cast<long long>(rank) * PPT * kThreads + threadIdx.x;
#pragma unroll
    for (int j = 0; j < PPT; ++j) {
      const long long i = first + static_cast<long long>(j) * kThreads;
      const bool valid = i < n;
      const int k = j * kThreads + static_cast<int>(threadIdx.x);
      planes[k] = valid ? cloud[3 * i] : 0.f;
      planes[PPT * kThreads + k] = valid ? cloud[3 * i + 1] : 0.f;
      planes[2 * PPT * kThreads + k] = valid ? cloud[3 * i + 2] : 0.f;
      d[j] = valid ? __int_as_float(0x7f800000) : -1.0f;  // +inf; a slot past the end never wins
    }
    // Each thread reads only the slots it wrote: no barrier needed.
  }

  __device__ unsigned long long update(float lx, float ly, float lz, float4& best) {
    float best_d = -1.0f;
    int best_j = 0;
#pragma unroll
    for (int j = 0; j < PPT; ++j) {
      const int k = j * kThreads + static_cast<int>(threadIdx.x);
      d[j] = fminf(d[j], squared_distance(sx[k], sx[PPT * kThreads + k], sx[2 * PPT * kThreads + k], lx, ly, lz));
      // Strictly greater: of equal distances the smaller j, which is the smaller index, stays.
      if (d[j] > best_d) best_d = d[j], best_j = j;
    }
    if (best_d < 0.0f) return 0;
    const int k = best_j * kThreads + static_cast<int>(threadIdx.x);
    best = make_float4(sx[k], sx[PPT * kThreads + k], sx[2 * PPT * kThreads + k], 0.f);
    return device_key(best_d, first + static_cast<long long>(best_j) * kThreads);
  }
};

/// Several blocks per cloud meeting in a 64-bit atomicMax and a grid-wide barrier (cooperative launch: every
/// block resident), or one block per cloud (kCooperative false, no barrier).
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
  ThreadPoints<PPT> mine;
  mine.load(p, scratch_distance ? scratch_distance + c.point_offset : nullptr, c.n, task.rank, c.blocks);

  int last = c.start;
  for (int s = 1; s < max_steps; ++s) {
    const bool active = s < c.m;
    unsigned long long key = active ? mine.update(p[3 * last], p[3 * last + 1], p[3 * last + 2]) : 0ull;
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

#if S3D_CUDA_ARCH >= 900
/// Warp max of a 64-bit key with two 32-bit redux instructions: the largest high word, then the largest low word
/// among the lanes that hold it.
__device__ __forceinline__ unsigned long long warp_max_redux(unsigned long long key) {
  const unsigned hi = static_cast<unsigned>(key >> 32), lo = static_cast<unsigned>(key);
  const unsigned top = __reduce_max_sync(0xffffffffu, hi);
  const unsigned low = __reduce_max_sync(0xffffffffu, hi == top ? lo : 0u);
  return (static_cast<unsigned long long>(top) << 32) | low;
}
#endif

/// sm_90: the blocks of one cloud form a thread-block cluster. Each step every warp sends its maximum and the
/// coordinates of its point into every block's shared memory (cluster_messages.cuh: st.async counted on the
/// receiver's mbarrier), each block waits for the messages of that step only, and every warp reduces all the
/// cluster's warp maxima itself: no block-level barrier and no cluster-wide one per step. Used only where the
/// GPU has clusters (the host checks); other GPUs run fps_kernel.
template <int PPT>
__device__ __forceinline__ void fps_cluster_body(const float* __restrict__ xyz, const FpsCloud* __restrict__ clouds,
                                                 int* __restrict__ out, int cluster_size) {
#if S3D_CUDA_ARCH >= 900
  namespace msg = cluster_messages;
  // Each warp's maximum and the coordinates of its point, so that no step waits on a global load of the winner;
  // two buffers, step s in buffer s % 2, each with the mbarrier that counts its bytes. Sized for the largest
  // cluster (16 blocks: 2 * 256 * 24 bytes = 12 KiB); a launch uses the first cluster_size * kWarps slots. With 16
  // blocks lanes 0-15 of each warp send, one peer each (a block also sends to itself, which st.async allows in a
  // cluster of two or more blocks).
  __shared__ unsigned long long warp_keys[2][kMaxCluster * kWarps];
  __shared__ float4 warp_points[2][kMaxCluster * kWarps];
  __shared__ __align__(8) unsigned long long arrived[2];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const FpsCloud c = clouds[blockIdx.x / cluster_size];
  const float* p = xyz + 3 * c.point_offset;
  const bool leader = rank == 0 && threadIdx.x == 0;
  if (leader && c.m > 0) out[c.out_offset] = c.start;
  // Up to kMaxPointsPerThread points a thread in registers, more with their coordinates in shared memory.
  constexpr bool kSharedXyz = PPT > kMaxPointsPerThread;
  std::conditional_t<kSharedXyz, SharedPoints<PPT>, ThreadPoints<PPT>> mine;
  if constexpr (kSharedXyz) {
    extern __shared__ float planes[];
    mine.load(p, planes, c.n, static_cast<int>(rank));
  } else {
    mine.load(p, nullptr, c.n, static_cast<int>(rank), cluster_size);
  }
  const int keys = cluster_size * kWarps;
  const std::uint32_t step_bytes = keys * static_cast<std::uint32_t>(sizeof(unsigned long long) + sizeof(float4));
  if (threadIdx.x == 0) {
    for (int b = 0; b < 2; ++b) msg::init_barrier(msg::local_address(&arrived[b]));
    // The arrivals of steps 1 and 2; step s + 2's is made once step s is read.
    if (c.m > 1) msg::expect_bytes(msg::local_address(&arrived[1]), step_bytes);
    if (c.m > 2) msg::expect_bytes(msg::local_address(&arrived[0]), step_bytes);
  }
  // Every block has started and initialised its barriers before a peer sends to it.
  cluster.sync();

  float4 winner = make_float4(p[3 * c.start], p[3 * c.start + 1], p[3 * c.start + 2], 0.f);
  for (int s = 1; s < c.m; ++s) {  // c.m is the same for every block of the cluster
    const int b = s % 2;
    float4 best = winner;
    const unsigned long long own = mine.update(winner.x, winner.y, winner.z, best);
    unsigned long long key = warp_max_redux(own);
    const int holder = __ffs(__ballot_sync(0xffffffffu, own == key)) - 1;
    best.x = __shfl_sync(0xffffffffu, best.x, holder);
    best.y = __shfl_sync(0xffffffffu, best.y, holder);
    best.z = __shfl_sync(0xffffffffu, best.z, holder);
    // Buffer b is written again at step s + 2, which no block reaches before every warp has sent its step
    // s + 1 message, i.e. has finished reading buffer b of step s.
    if (lane < cluster_size) {
      const int slot = static_cast<int>(rank) * kWarps + warp;
      const std::uint32_t barrier = msg::peer_address(msg::local_address(&arrived[b]), lane);
      msg::send(msg::peer_address(msg::local_address(&warp_keys[b][slot]), lane), key, barrier);
      msg::send(msg::peer_address(msg::local_address(&warp_points[b][slot]), lane), best, barrier);
    }
    // Buffer b's phases are its steps b, b + 2, ...: step s is phase (s - 1) / 2.
    msg::wait_phase(msg::local_address(&arrived[b]), static_cast<std::uint32_t>((s - 1) / 2) & 1u);
    unsigned long long mine_best = 0;
    int mine_slot = 0;
    for (int i = lane; i < keys; i += 32)
      if (warp_keys[b][i] > mine_best) mine_best = warp_keys[b][i], mine_slot = i;
    key = warp_max_redux(mine_best);
    const int slot = __shfl_sync(0xffffffffu, mine_slot, __ffs(__ballot_sync(0xffffffffu, mine_best == key)) - 1);
    winner = warp_points[b][slot];
    if (leader) out[c.out_offset + s] = static_cast<int>(fps_key_index(key));
    __syncwarp();
    if (threadIdx.x == 0 && s + 2 < c.m) msg::expect_bytes(msg::local_address(&arrived[b]), step_bytes);
  }
  // No block leaves while a peer may still write into its shared memory.
  cluster.sync();
#else
  __trap();  // never launched: the host picks fps_kernel below sm_90
#endif
}

template <int PPT>
__global__ void __launch_bounds__(kThreads)
    fps_cluster_kernel(const float* __restrict__ xyz, const FpsCloud* __restrict__ clouds, int* __restrict__ out,
                       int cluster_size) {
  fps_cluster_body<PPT>(xyz, clouds, out, cluster_size);
}

/// Mid-size clouds: kMidPointsPerThread points a thread (coordinates in dynamic shared memory), two blocks an SM.
__global__ void __launch_bounds__(kThreads, 2)
    fps_cluster_mid_kernel(const float* __restrict__ xyz, const FpsCloud* __restrict__ clouds, int* __restrict__ out,
                           int cluster_size) {
  fps_cluster_body<kMidPointsPerThread>(xyz, clouds, out, cluster_size);
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
    int major = 0;
    S3D_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index()));
#ifdef S3D_PORTABLE_KERNELS
    clusters_ = false;  // the portable build tests the paths older GPUs take
#else
    clusters_ = major >= 9;
#endif
    s3d::detail::require_kernel_image(reinterpret_cast<const void*>(&fps_kernel<1, true>));
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

    if (clusters_ && try_clusters(batch, total_points, device_out, stream)) return;

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

    const auto tables = upload_tables(stream, total_points, ppt == 0);
    const FpsCloud* d_clouds = tables.first;
    const FpsBlock* d_blocks = tables.second;
    float* distance = ppt == 0 ? distance_.data() : nullptr;

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
  /// sm_90: each cloud as one cluster when its points then fit in registers: up to kPortableCluster blocks of
  /// up to kMaxPointsPerThread points a thread (clouds up to 32,768 points, the heuristic of docs/PERFORMANCE.md),
  /// else (up to kMaxClusterPoints) 8 or 16 blocks of kMidPointsPerThread points a thread when such a cluster fits
  /// on the GPU. False: the caller runs fps_kernel.
  bool try_clusters(const FpsBatch& batch, std::int64_t total_points, std::int32_t* device_out, StreamHandle stream) {
    std::int64_t longest = 0;
    for (std::int64_t n : batch.lengths) longest = std::max(longest, n);
    int size = 0, ppt = 0;
    if (longest <= static_cast<long long>(kPortableCluster) * kThreads * kMaxPointsPerThread) {
      // At least 2 blocks (a cluster's messages go to peers: st.async into a one-block cluster is not allowed),
      // 4 for clouds of more than 2 blocks' threads, 8 only when the points do not fit into 4 blocks' registers:
      // a step's exchange grows with the blocks faster than the work of the points a thread owns shrinks
      // (docs/PERFORMANCE.md, FPS batch).
      size = longest <= 2LL * kThreads ? 2 : 4;
      while (size < kPortableCluster && static_cast<long long>(size) * kThreads * kMaxPointsPerThread < longest)
        size *= 2;
      ppt = points_per_thread((longest + size - 1) / size);
    } else if (longest <= kMaxClusterPoints) {
      // Mid-size clouds (KITTI scans): 16 points a thread, and the fewest blocks that hold them (8 up to 65,536
      // points, else 16), for the same reason: a batch then keeps more clouds in flight.
      ppt = kMidPointsPerThread;
      size = longest <= static_cast<long long>(kPortableCluster) * kThreads * kMidPointsPerThread ? kPortableCluster
                                                                                                  : kMaxCluster;
      if (!mid_clusters_fit(size)) return false;
    }
    if (ppt == 0) return false;
    layout(batch, static_cast<long long>(size) * batch.lengths.size(), total_points);
    for (FpsCloud& c : table_) c.blocks = size;
    const FpsCloud* d_clouds = upload_tables(stream, total_points, false).first;
    cudaLaunchConfig_t config = cluster_config(static_cast<unsigned>(size * table_.size()), stream);
    if (ppt == kMidPointsPerThread) config.dynamicSmemBytes = SharedPoints<kMidPointsPerThread>::kBytes;
    cudaLaunchAttribute cluster = cluster_attribute(size);
    config.attrs = &cluster;
    config.numAttrs = 1;
    const float* xyz = batch.xyz;
    switch (ppt) {
      case 1:
        S3D_CUDA_CHECK(cudaLaunchKernelEx(&config, fps_cluster_kernel<1>, xyz, d_clouds, device_out, size));
        break;
      case 2:
        S3D_CUDA_CHECK(cudaLaunchKernelEx(&config, fps_cluster_kernel<2>, xyz, d_clouds, device_out, size));
        break;
      case 4:
        S3D_CUDA_CHECK(cudaLaunchKernelEx(&config, fps_cluster_kernel<4>, xyz, d_clouds, device_out, size));
        break;
      case 8:
        S3D_CUDA_CHECK(cudaLaunchKernelEx(&config, fps_cluster_kernel<8>, xyz, d_clouds, device_out, size));
        break;
      default:
        S3D_CUDA_CHECK(cudaLaunchKernelEx(&config, fps_cluster_mid_kernel, xyz, d_clouds, device_out, size));
        break;
    }
    S3D_CUDA_CHECK_LAUNCH();
    work_done_.record(stream);
    return true;
  }

  static cudaLaunchAttribute cluster_attribute(int size) {
    cudaLaunchAttribute cluster = {};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = static_cast<unsigned>(size);
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    return cluster;
  }
  static cudaLaunchConfig_t cluster_config(unsigned grid, StreamHandle stream) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(grid);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    return config;
  }

  /// Whether a cluster of `size` blocks of fps_cluster_mid_kernel can be resident (asked once per
  /// size): 16 needs the kernel's non-portable cluster size attribute, and a GPU whose GPCs (or partition) hold
  /// fewer SMs than that gets no such cluster. Errors of these queries are cleared and mean no.
  bool mid_clusters_fit(int size) {
    int& known = size > kPortableCluster ? mid_fit_[1] : mid_fit_[0];
    if (known >= 0) return known > 0;
    const void* kernel = reinterpret_cast<const void*>(&fps_cluster_mid_kernel);
    const int bytes = static_cast<int>(SharedPoints<kMidPointsPerThread>::kBytes);
    bool ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess;
    if (ok && size > kPortableCluster)
      ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
    int clusters = 0;
    if (ok) {
      cudaLaunchConfig_t config = cluster_config(static_cast<unsigned>(size), nullptr);
      config.dynamicSmemBytes = static_cast<std::size_t>(bytes);
      cudaLaunchAttribute cluster = cluster_attribute(size);
      config.attrs = &cluster;
      config.numAttrs = 1;
      ok = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) == cudaSuccess && clusters >= 1;
    }
    if (!ok) (void)cudaGetLastError();  // a refused attribute or query is not sticky: clear it
    known = ok ? clusters : 0;
    return ok;
  }

  /// Copies table_ and blocks_ to the device (through pinned memory the previous call has finished reading)
  /// and zeroes the arg-max slots. Scratch lives on the engine's stream (released there at destruction); the
  /// caller's stream is ordered after the allocations.
  std::pair<const FpsCloud*, const FpsBlock*> upload_tables(StreamHandle stream, std::int64_t total_points,
                                                            bool need_distances) {
    upload_done_.synchronize();
    // The last launch (on whatever stream it was queued) may still read the tables and scratch that a resize
    // below frees on stream_: stream_ waits for it first (FpsPipeline keeps two batches in flight).
    work_done_.wait(stream_);
    const std::size_t cloud_bytes = table_.size() * sizeof(FpsCloud);
    const std::size_t table_bytes = cloud_bytes + blocks_.size() * sizeof(FpsBlock);
    staging_.resize(table_bytes);
    std::memcpy(staging_.data(), table_.data(), cloud_bytes);
    std::memcpy(staging_.data() + cloud_bytes, blocks_.data(), blocks_.size() * sizeof(FpsBlock));
    device_tables_.resize(table_bytes, stream_);
    slots_.resize(3 * table_.size(), stream_);
    if (need_distances) distance_.resize(static_cast<std::size_t>(total_points), stream_);
    allocated_.record(stream_);
    allocated_.wait(stream);
    device_tables_.copy_from_host_async(staging_.data(), table_bytes, stream);
    upload_done_.record(stream);
    slots_.fill_zero_async(stream);
    return {reinterpret_cast<const FpsCloud*>(device_tables_.data()),
            reinterpret_cast<const FpsBlock*>(device_tables_.data() + cloud_bytes)};
  }

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
  bool clusters_ = false;
  int mid_fit_[2] = {-1, -1};  // clusters of 8 and 16 mid-size blocks resident at once (0: none); -1: not asked
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
