// VoxelEngine's CUDA fast path (voxels_hash.cuh). Why each step gives the CPU backend's result:
//  - A voxel's members are its K smallest point indices in increasing order. Slot j of a voxel's member array
//    receives values by atomicMin; what it displaces (or what failed to displace it) moves on to slot j + 1.
//    Whatever the interleaving, the values offered to slot j + 1 are those offered to slot j less their
//    minimum, so slot j ends holding the (j + 1)-th smallest index: the CPU's sorted run, cut at K.
//  - max_voxels keeps the surviving voxels (length >= min_points) whose first index is among the max_voxels
//    smallest. A point is "first" when it is slot 0 of its voxel; the exclusive scan of those flags in input
//    order is each surviving voxel's rank by first index, so rank < max_voxels is the rule exactly.
//  - Kept voxels are then sorted by key (keys are distinct), the CPU's run order, and aggregated by
//    voxel_math.hpp over the same members in the same order.
// Slots, and the order in which atomics land, vary from run to run; no output depends on them (the counters
// are integer sums), so every output is the same bits every run.
#include <cuda_runtime.h>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/errors.hpp"
#include "voxel_hash.cuh"
#include "voxels_hash.cuh"

namespace s3d::points::detail {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kNoMember = 0xffffffffu;  // an empty member slot (the memset's value; above every index)

// Tallies, stored complemented so that the one 0xff memset that empties the table also zeroes them:
// value = ~word, and adding x is subtracting x from the word.
enum : int {
  kOutOfRange = 0,
  kOverMaxPoints = 1,
  kOverMaxVoxels = 2,
  kStatus = 3,
  kKeptCount = 4,
  kSpare = 5,
  kTallies = 8
};
constexpr unsigned long long kStatusFull = 1;  // a probe found no free slot (cannot happen at load <= 0.5)

unsigned blocks_for(long long n) {
  return static_cast<unsigned>(std::max<long long>(1, (n + kThreads - 1) / kThreads));
}

template <typename Key>
struct Table {
  VoxelHashView<Key> hash;
  unsigned* length;   // [capacity] ~points in the voxel
  unsigned* members;  // [capacity * k] the k smallest indices, increasing, kNoMember past the last
  unsigned long long* tally;
  int k;

  __device__ __forceinline__ unsigned length_of(std::int64_t slot) const { return ~length[slot]; }
  __device__ __forceinline__ const unsigned* members_of(std::int64_t slot) const {
    return members + slot * static_cast<std::int64_t>(k);
  }
};

/// Sums `value` over the block and adds it to a complemented tally (one atomic per block).
__device__ __forceinline__ void add_block(unsigned long long value, unsigned long long* word) {
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __syncthreads();  // the storage is shared by every call in the kernel
  const unsigned long long sum = Reduce(temp).Sum(value);
  if (threadIdx.x == 0 && sum != 0) atomicAdd(word, 0ULL - sum);
}

/// Per point: its key, its voxel's slot (-1 when out of the grid), the voxel's length and member cascade.
/// Also resets point_voxel to -1 (the output kernel, later on the stream, sets the kept points).
template <typename Key>
__global__ void __launch_bounds__(kThreads)
    insert_kernel(const float* __restrict__ xyz, const std::int32_t* __restrict__ batch, long long n, VoxelGrid grid,
                  Table<Key> t, std::int32_t* __restrict__ point_slot, std::int32_t* __restrict__ point_voxel) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const bool active = i < n;
  unsigned long long key = grid.sentinel;
  if (active) key = voxel_key(grid, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], batch ? batch[i] : 0);
  const bool outside = active && key == grid.sentinel;
  add_block(outside ? 1ULL : 0ULL, t.tally + kOutOfRange);
  if (!active) return;
  point_voxel[i] = -1;
  if (outside) {
    point_slot[i] = -1;
    return;
  }
  // insert_slot's own flag lands in a word the host ignores; a full table is reported through kStatus.
  const std::int64_t slot = t.hash.insert_slot(static_cast<Key>(key), reinterpret_cast<unsigned*>(t.tally + kSpare));
  if (slot < 0) {
    atomicAnd(t.tally + kStatus, ~kStatusFull);
    point_slot[i] = -1;
    return;
  }
  point_slot[i] = static_cast<std::int32_t>(slot);
  atomicSub(t.length + slot, 1u);
  unsigned* m = t.members + slot * static_cast<std::int64_t>(t.k);
  unsigned v = static_cast<unsigned>(i);
  // Slots only decrease: above the last one now, v can never be among the k smallest.
  if (v > *reinterpret_cast<volatile unsigned*>(m + t.k - 1)) return;
  for (int j = 0; j < t.k; ++j) {
    const unsigned old = atomicMin(m + j, v);
    if (old == kNoMember) break;
    v = max(old, v);
  }
}

/// 1 for the first point (smallest index) of a voxel that has at least min_points points.
template <typename Key>
struct FirstOfSurvivor {
  Table<Key> t;
  const std::int32_t* point_slot;
  unsigned min_points;
  __device__ __forceinline__ int operator()(int i) const {
    const std::int32_t s = point_slot[i];
    return s >= 0 && t.members_of(s)[0] == static_cast<unsigned>(i) && t.length_of(s) >= min_points ? 1 : 0;
  }
};

/// Per point: a voxel's first point files the voxel at its rank when kept, and adds its drops. Slots
/// [kept, cap) get the padding key, which sorts after every voxel.
template <typename Key>
__global__ void __launch_bounds__(kThreads)
    compact_kernel(long long n, Table<Key> t, FirstOfSurvivor<Key> first, const std::int32_t* __restrict__ rank,
                   long long max_voxels, long long cap, Key* __restrict__ kept_key,
                   std::int32_t* __restrict__ kept_slot) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long survivors = rank[n - 1] + first(static_cast<int>(n - 1));
  const long long kept = max_voxels > 0 && survivors > max_voxels ? max_voxels : survivors;
  unsigned long long over_points = 0, over_voxels = 0;
  if (i < n) {
    const std::int32_t s = first.point_slot[i];
    if (s >= 0 && t.members_of(s)[0] == static_cast<unsigned>(i)) {
      const unsigned length = t.length_of(s);
      const unsigned count = min(length, static_cast<unsigned>(t.k));
      over_points = length - count;
      const std::int32_t r = rank[i];
      if (length >= first.min_points && (max_voxels == 0 || r < max_voxels)) {
        kept_key[r] = t.hash.keys[s];
        kept_slot[r] = s;
      } else {
        over_voxels = count;
      }
    }
    if (i >= kept && i < cap) kept_key[i] = static_cast<Key>(~Key{0});
    if (i == 0) t.tally[kKeptCount] = static_cast<unsigned long long>(kept);
  }
  add_block(over_points, t.tally + kOverMaxPoints);
  add_block(over_voxels, t.tally + kOverMaxVoxels);
}

}  // namespace

struct Outputs {
  std::int32_t* coords;
  std::int32_t* points_per_voxel;
  std::int32_t* representative;
  float* xyz;
  std::int32_t* point_voxel;
};

namespace {

/// Per kept voxel, in key order: the CPU backend's per-run body.
template <typename Key>
__global__ void __launch_bounds__(kThreads)
    output_kernel(Table<Key> t, VoxelGrid grid, const Key* __restrict__ sorted_key,
                  const std::int32_t* __restrict__ sorted_slot, const float* __restrict__ xyz, int aggregate,
                  Outputs out) {
  const long long v = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (v >= static_cast<long long>(t.tally[kKeptCount])) return;
  const std::int32_t s = sorted_slot[v];
  const unsigned long long key = sorted_key[v];
  const int count = static_cast<int>(min(t.length_of(s), static_cast<unsigned>(t.k)));
  // Indices are below 2^31, so the unsigned members read as int32 unchanged.
  const std::int32_t* members = reinterpret_cast<const std::int32_t*>(t.members_of(s));
  for (int j = 0; j < count; ++j) out.point_voxel[members[j]] = static_cast<std::int32_t>(v);
  voxel_coords(grid, key, out.coords + 4 * v);
  out.points_per_voxel[v] = count;
  aggregate_voxel(grid, key, members, count, xyz, aggregate, out.xyz + 3 * v, out.representative + v);
}

std::size_t align_up(std::size_t bytes) { return (bytes + 255) & ~std::size_t{255}; }

bool same_grid(const VoxelGrid& a, const VoxelGrid& b) {
  bool same = a.origin == b.origin && a.batches == b.batches && a.sentinel == b.sentinel;
  for (int i = 0; i < 3; ++i)
    same = same && a.size[i] == b.size[i] && a.inv_size[i] == b.inv_size[i] && a.min_bound[i] == b.min_bound[i] &&
           a.range_lo[i] == b.range_lo[i] && a.range_hi[i] == b.range_hi[i] && a.offset[i] == b.offset[i] &&
           a.dims[i] == b.dims[i] && a.corner[i] == b.corner[i];
  return same;
}

}  // namespace

/// Everything one call queues, resolved on the host; two calls with equal plans queue identical work.
struct HashVoxels::Plan {
  long long n = 0, cap = 0, max_voxels = 0;
  int k = 0, min_points = 1, aggregate = 0, key_bits = 0;
  bool wide = false;  // 64-bit keys
  VoxelGrid grid{};
  const float* xyz = nullptr;
  const std::int32_t* batch = nullptr;
  StreamHandle stream = nullptr;
  unsigned char* table = nullptr;
  std::size_t keys_bytes = 0, length_bytes = 0, members_bytes = 0, table_bytes = 0;
  std::uint64_t capacity = 0;
  std::int32_t *point_slot = nullptr, *rank = nullptr, *kept_slot = nullptr;
  void* kept_key = nullptr;
  unsigned char* scratch = nullptr;
  std::size_t scan_bytes = 0, sort_bytes = 0;
  Outputs out{};
  unsigned long long* tally_host = nullptr;

  bool operator==(const Plan& o) const {
    return n == o.n && cap == o.cap && max_voxels == o.max_voxels && k == o.k && min_points == o.min_points &&
           aggregate == o.aggregate && key_bits == o.key_bits && wide == o.wide && same_grid(grid, o.grid) &&
           xyz == o.xyz && batch == o.batch && stream == o.stream && table == o.table && capacity == o.capacity &&
           point_slot == o.point_slot && rank == o.rank && kept_slot == o.kept_slot && kept_key == o.kept_key &&
           scratch == o.scratch && scan_bytes == o.scan_bytes && sort_bytes == o.sort_bytes &&
           out.coords == o.out.coords && out.points_per_voxel == o.out.points_per_voxel &&
           out.representative == o.out.representative && out.xyz == o.out.xyz && out.point_voxel == o.out.point_voxel &&
           tally_host == o.tally_host;
  }
};

namespace {

template <typename Key>
Table<Key> table_of(const HashVoxels::Plan& p) {
  Table<Key> t;
  t.hash = VoxelHashView<Key>{reinterpret_cast<Key*>(p.table), nullptr, p.capacity - 1};
  t.length = reinterpret_cast<unsigned*>(p.table + p.keys_bytes);
  t.members = reinterpret_cast<unsigned*>(p.table + p.keys_bytes + p.length_bytes);
  t.tally = reinterpret_cast<unsigned long long*>(p.table + p.keys_bytes + p.length_bytes + p.members_bytes);
  t.k = p.k;
  return t;
}

/// The CUB scratch sizes of a plan (a host-side query; no device work).
template <typename Key>
void size_scratch(HashVoxels::Plan& p) {
  const Table<Key> t = table_of<Key>(p);
  const FirstOfSurvivor<Key> first{t, p.point_slot, static_cast<unsigned>(p.min_points)};
  const auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), first);
  Key* kept_key = static_cast<Key*>(p.kept_key);
  S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, p.scan_bytes, flags, p.rank, static_cast<int>(p.n), p.stream));
  S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, p.sort_bytes, kept_key, kept_key + p.cap, p.kept_slot,
                                                 p.kept_slot + p.cap, static_cast<int>(p.cap), 0, p.key_bits,
                                                 p.stream));
}

/// Queues the whole call on p.stream, ending with the tallies' copy to p.tally_host; no host wait.
template <typename Key>
void enqueue(const HashVoxels::Plan& p) {
  const Table<Key> t = table_of<Key>(p);
  const FirstOfSurvivor<Key> first{t, p.point_slot, static_cast<unsigned>(p.min_points)};
  const auto flags = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), first);
  Key* kept_key = static_cast<Key*>(p.kept_key);
  Key* sorted_key = kept_key + p.cap;
  std::int32_t* sorted_slot = p.kept_slot + p.cap;
  std::size_t scan_bytes = p.scan_bytes, sort_bytes = p.sort_bytes;
  S3D_CUDA_CHECK(cudaMemsetAsync(p.table, 0xff, p.table_bytes, p.stream));
  insert_kernel<Key>
      <<<blocks_for(p.n), kThreads, 0, p.stream>>>(p.xyz, p.batch, p.n, p.grid, t, p.point_slot, p.out.point_voxel);
  S3D_CUDA_CHECK_LAUNCH();
  S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(p.scratch, scan_bytes, flags, p.rank, static_cast<int>(p.n), p.stream));
  compact_kernel<Key>
      <<<blocks_for(p.n), kThreads, 0, p.stream>>>(p.n, t, first, p.rank, p.max_voxels, p.cap, kept_key, p.kept_slot);
  S3D_CUDA_CHECK_LAUNCH();
  S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(p.scratch, sort_bytes, kept_key, sorted_key, p.kept_slot, sorted_slot,
                                                 static_cast<int>(p.cap), 0, p.key_bits, p.stream));
  output_kernel<Key>
      <<<blocks_for(p.cap), kThreads, 0, p.stream>>>(t, p.grid, sorted_key, sorted_slot, p.xyz, p.aggregate, p.out);
  S3D_CUDA_CHECK_LAUNCH();
  S3D_CUDA_CHECK(
      cudaMemcpyAsync(p.tally_host, t.tally, kTallies * sizeof(unsigned long long), cudaMemcpyDeviceToHost, p.stream));
}

}  // namespace

HashVoxels::HashVoxels() : plan_(std::make_unique<Plan>()) {}
HashVoxels::~HashVoxels() = default;

DeviceVoxels HashVoxels::run(const VoxelRequest& r, const float* xyz, const std::int32_t* batch, StreamHandle stream) {
  Plan& p = *plan_;
  const Plan previous = p;
  p.n = static_cast<long long>(r.points.size);
  p.cap = r.max_voxels > 0 ? std::min<long long>(r.max_voxels, p.n) : p.n;
  p.max_voxels = r.max_voxels;
  p.k = r.max_points_per_voxel;
  p.min_points = r.min_points_per_voxel;
  p.aggregate = r.aggregate;
  p.grid = r.grid;
  p.xyz = xyz;
  p.batch = batch;
  p.stream = stream;
  p.key_bits = 1;
  while (p.key_bits < 64 && (1ULL << p.key_bits) <= r.grid.sentinel) ++p.key_bits;
  // 32-bit keys (half the table and sort traffic) whenever every key and the empty marker fit.
  p.wide = r.grid.sentinel >= 0xffffffffULL;
  const std::size_t key_size = p.wide ? 8 : 4;
  p.capacity = 1;
  while (p.capacity < 2 * static_cast<std::uint64_t>(p.n)) p.capacity <<= 1;  // load factor <= 0.5
  p.keys_bytes = align_up(p.capacity * key_size);
  p.length_bytes = align_up(p.capacity * 4);
  p.members_bytes = align_up(p.capacity * static_cast<std::size_t>(p.k) * 4);
  p.table_bytes = p.keys_bytes + p.length_bytes + p.members_bytes + kTallies * sizeof(unsigned long long);

  const std::size_t n = static_cast<std::size_t>(p.n), cap = static_cast<std::size_t>(p.cap);
  table_.resize(p.table_bytes, stream);
  point_slot_.resize(n, stream);
  rank_.resize(n, stream);
  kept_slot_.resize(2 * cap, stream);
  kept_key_.resize(2 * cap, stream);  // 8-byte elements hold either key width
  point_voxel_.resize(n, stream);
  coords_.resize(4 * cap, stream);
  per_voxel_.resize(cap, stream);
  representative_.resize(cap, stream);
  out_xyz_.resize(3 * cap, stream);
  tally_host_.resize(kTallies);
  p.table = table_.data();
  p.point_slot = point_slot_.data();
  p.rank = rank_.data();
  p.kept_slot = kept_slot_.data();
  p.kept_key = kept_key_.data();
  p.out = Outputs{coords_.data(), per_voxel_.data(), representative_.data(), out_xyz_.data(), point_voxel_.data()};
  p.tally_host = tally_host_.data();
  // CUB's scratch query costs host time: only when a size it depends on changed.
  if (!(p.n == previous.n && p.cap == previous.cap && p.key_bits == previous.key_bits && p.wide == previous.wide)) {
    if (p.wide)
      size_scratch<unsigned long long>(p);
    else
      size_scratch<unsigned>(p);
  }
  scratch_.resize(std::max<std::size_t>({p.scan_bytes, p.sort_bytes, 1}), stream);
  p.scratch = scratch_.data();

  // Launch latency, not the kernels, bounds a call: a call that repeats the previous one exactly is captured
  // once into a CUDA graph and replayed; any other call runs eagerly.
  const auto queue = [&] {
    if (p.wide)
      enqueue<unsigned long long>(p);
    else
      enqueue<unsigned>(p);
  };
  const bool repeat = p == previous;
  if (!repeat) graph_.reset();
  if (repeat && !graph_.empty()) {
    graph_.launch(stream);
  } else if (repeat && !graphs_disabled_) {
    if (graph_.capture(stream, queue))
      graph_.launch(stream);
    else
      graphs_disabled_ = true, queue();
  } else {
    queue();
  }
  S3D_CUDA_CHECK(cudaStreamSynchronize(stream));
  const unsigned long long* tally = tally_host_.data();
  if ((~tally[kStatus]) & kStatusFull) throw CudaError("voxelize: the voxel hash table is full");

  DeviceVoxels d;
  d.count = static_cast<std::int64_t>(tally[kKeptCount]);
  d.dropped_out_of_range = static_cast<std::int64_t>(~tally[kOutOfRange]);
  d.dropped_over_max_points = static_cast<std::int64_t>(~tally[kOverMaxPoints]);
  d.dropped_over_max_voxels = static_cast<std::int64_t>(~tally[kOverMaxVoxels]);
  d.coords = coords_.data();
  d.point_voxel = point_voxel_.data();
  d.points_per_voxel = per_voxel_.data();
  d.representative = representative_.data();
  d.xyz = out_xyz_.data();
  return d;
}

}  // namespace s3d::points::detail
