// VoxelEngine's CUDA fast path (voxels_hash.cuh). Why each step gives the CPU backend's result:
//  - A voxel's members are its K smallest point indices in increasing order. Slot j of a voxel's member array
//    receives values by atomicMin; what it displaces (or what failed to displace it) moves on to slot j + 1.
//    Whatever the interleaving, the values offered to slot j + 1 are those offered to slot j less their
//    minimum, so slot j ends holding the (j + 1)-th smallest index: the CPU's sorted run, cut at K.
//  - max_voxels keeps the surviving voxels (length >= min_points) whose first index is among the max_voxels
//    smallest. A point is "first" when it is slot 0 of its voxel; the exclusive scan of those flags in input
//    order is each surviving voxel's rank by first index, so rank < max_voxels is the rule exactly.
//  - The output order is the kept keys' order (the CPU's runs). Keys are distinct; a key's bucket is its high
//    bits, so every key of a lower bucket is smaller. A kept voxel's place is the number of kept voxels in lower
//    buckets (a prefix of the bucket counts) plus the number in its own bucket with a smaller key (counted
//    over the bucket's members, scattered together): exactly its rank in the sorted keys.
//  - Outputs are aggregated by voxel_math.hpp over the same members in the same order.
// Slots, scatter positions and the order in which atomics land vary from run to run; no output depends on them
// (the counters are integer sums), so every output is the same bits every run.
// Each call leaves the table and the bucket counters as it found them (empty): the kernel that reads a voxel
// last, by the one thread that owns it, also empties its slot and its bucket's counters.
#include <cuda_runtime.h>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <algorithm>
#include <cmath>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/errors.hpp"
#include "voxel_hash.cuh"
#include "voxels_hash.cuh"

namespace s3d::points::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kScatterThreads = 1024;
constexpr unsigned kNoMember = 0xffffffffu;  // an empty member slot (the memset's value; above every index)
constexpr std::int32_t kOutside = -1;        // point_slot of a point outside the grid
constexpr std::int32_t kNoSlot = -2;         // point_slot of a point whose voxel found no free slot
constexpr int kGroup = 32;                   // buckets per group count (one 128-byte line of counts)
constexpr int kMaxBucketBits = 16;           // at most 65,536 buckets, 2,048 groups (two per scatter thread)

// Device tallies: plain values; the scatter kernel zeroes those the last kernel adds to.
enum : int {
  kOutOfRange = 0,
  kOverMaxPoints = 1,
  kOverMaxVoxels = 2,
  kFull = 3,  // points whose voxel found no free slot (cannot happen at load <= 0.5)
  kKeptCount = 4,
  kSurvivors = 5,
  kSpare = 6,  // insert_slot's own flag word (unread)
  kTallies = 8
};

unsigned blocks_for(long long n, int threads = kThreads) {
  return static_cast<unsigned>(std::max<long long>(1, (n + threads - 1) / threads));
}

template <typename Key>
struct Table {
  VoxelHashView<Key> hash;
  unsigned* length;   // [capacity] ~points in the voxel
  unsigned* members;  // [capacity * k] the k smallest indices, increasing, kNoMember past the last
  int k;

  __device__ __forceinline__ unsigned length_of(std::int64_t slot) const { return ~length[slot]; }
  __device__ __forceinline__ unsigned* members_of(std::int64_t slot) const {
    return members + slot * static_cast<std::int64_t>(k);
  }
  /// Back to empty: the slot's key, length and its first `count` members (the others were never written).
  __device__ __forceinline__ void empty(std::int64_t slot, int count) const {
    hash.keys[slot] = VoxelHashView<Key>::kEmpty;
    length[slot] = 0xffffffffu;
    unsigned* m = members_of(slot);
    for (int j = 0; j < count; ++j) m[j] = kNoMember;
  }
};

/// Per-bucket counters: count[b] kept voxels, group[b / kGroup] their sum over the group, cursor[b] the
/// scatter's fill. All zero between calls.
struct Buckets {
  unsigned* count;
  unsigned* group;
  unsigned* cursor;
  int shift;  // bucket = key >> shift
  int groups;
};

/// Sums `value` over the block and adds it to a tally (one atomic per block).
__device__ __forceinline__ void add_block(unsigned long long value, unsigned long long* word) {
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __syncthreads();  // the storage is shared by every call in the kernel
  const unsigned long long sum = Reduce(temp).Sum(value);
  if (threadIdx.x == 0 && sum != 0) atomicAdd(word, sum);
}

/// Per point: its key, its voxel's slot (kOutside, kNoSlot), the voxel's length and member cascade. Also sets
/// point_voxel to -1 (the last kernel sets the kept points).
template <typename Key>
__global__ void __launch_bounds__(kThreads)
    insert_kernel(const float* __restrict__ xyz, const std::int32_t* __restrict__ batch, long long n, VoxelGrid grid,
                  Table<Key> t, unsigned* spare, std::int32_t* __restrict__ point_slot,
                  std::int32_t* __restrict__ point_voxel) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  point_voxel[i] = -1;
  const unsigned long long key = voxel_key(grid, xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], batch ? batch[i] : 0);
  if (key == grid.sentinel) {
    point_slot[i] = kOutside;
    return;
  }
  // insert_slot's own flag lands in a word the host ignores; the last kernel counts the kNoSlot points.
  const std::int64_t slot = t.hash.insert_slot(static_cast<Key>(key), spare);
  if (slot < 0) {
    point_slot[i] = kNoSlot;
    return;
  }
  point_slot[i] = static_cast<std::int32_t>(slot);
  atomicSub(t.length + slot, 1u);
  unsigned* m = t.members_of(slot);
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

/// The scan's output, per point i with its rank r (kept voxels before it, by first index): a voxel's first
/// point files the voxel at r when kept and counts it in its bucket, or records the voxel as its own to drop
/// (owner[i] = slot; -1 otherwise). The last point stores the survivors' total.
template <typename Key>
struct FileVoxel {
  Table<Key> t;
  const std::int32_t* point_slot;
  unsigned min_points;
  long long n, max_voxels;
  Buckets b;
  std::int32_t* owner;
  std::int32_t* kept_slot;
  unsigned long long* tally;

  template <typename Index, typename Rank>
  __device__ __forceinline__ void operator()(Index index, Rank rank) const {
    const long long i = static_cast<long long>(index), r = static_cast<long long>(rank);
    const std::int32_t s = point_slot[i];
    const bool first = s >= 0 && t.members_of(s)[0] == static_cast<unsigned>(i);
    const bool survivor = first && t.length_of(s) >= min_points;
    if (i == n - 1) tally[kSurvivors] = static_cast<unsigned long long>(r + (survivor ? 1 : 0));
    std::int32_t own = -1;
    if (survivor && (max_voxels == 0 || r < max_voxels)) {
      kept_slot[r] = s;
      const unsigned long long bucket = static_cast<unsigned long long>(t.hash.keys[s]) >> b.shift;
      atomicAdd(b.count + bucket, 1u);
      atomicAdd(b.group + bucket / kGroup, 1u);
    } else if (first) {
      own = s;
    }
    owner[i] = own;
  }
};

/// Per kept voxel (by first-index rank): its bucket's start (the group counts' prefix, recomputed by each
/// block, plus the counts before it in its group) and a place there. Writes the key, slot and the bucket's
/// [start, end) at that place. Also stores the kept count and zeroes the tallies the last kernel adds to.
template <typename Key>
__global__ void __launch_bounds__(kScatterThreads)
    scatter_kernel(Table<Key> t, Buckets b, const std::int32_t* __restrict__ kept_slot, long long max_voxels,
                   unsigned long long* tally, Key* __restrict__ sorted_key, std::int32_t* __restrict__ sorted_slot,
                   std::int32_t* __restrict__ span) {
  const long long survivors = static_cast<long long>(tally[kSurvivors]);
  const long long kept = max_voxels > 0 && survivors > max_voxels ? max_voxels : survivors;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    tally[kKeptCount] = static_cast<unsigned long long>(kept);
    tally[kOutOfRange] = tally[kOverMaxPoints] = tally[kOverMaxVoxels] = tally[kFull] = 0;
  }
  if (blockIdx.x * static_cast<long long>(kScatterThreads) >= kept) return;  // the whole block idle
  using Scan = cub::BlockScan<unsigned, kScatterThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ unsigned group_start[2 * kScatterThreads];
  unsigned g[2];
  for (int j = 0; j < 2; ++j) {
    const int at = 2 * static_cast<int>(threadIdx.x) + j;
    g[j] = at < b.groups ? b.group[at] : 0u;
  }
  Scan(temp).ExclusiveSum(g, g);
  group_start[2 * threadIdx.x] = g[0];
  group_start[2 * threadIdx.x + 1] = g[1];
  __syncthreads();
  const long long r = blockIdx.x * static_cast<long long>(kScatterThreads) + threadIdx.x;
  if (r >= kept) return;
  const std::int32_t s = kept_slot[r];
  const Key key = t.hash.keys[s];
  const unsigned long long bucket = static_cast<unsigned long long>(key) >> b.shift;
  unsigned start = group_start[bucket / kGroup];
  const unsigned before = static_cast<unsigned>(bucket % kGroup);
  const uint4* line = reinterpret_cast<const uint4*>(b.count + (bucket - before));
#pragma unroll
  for (int q = 0; q < kGroup / 4; ++q) {
    const uint4 w = line[q];
    start += (4 * q < before ? w.x : 0u) + (4 * q + 1 < before ? w.y : 0u) + (4 * q + 2 < before ? w.z : 0u) +
             (4 * q + 3 < before ? w.w : 0u);
  }
  const unsigned end = start + b.count[bucket];
  const unsigned at = start + atomicAdd(b.cursor + bucket, 1u);
  sorted_key[at] = key;
  sorted_slot[at] = s;
  span[2 * at] = static_cast<std::int32_t>(start);
  span[2 * at + 1] = static_cast<std::int32_t>(end);
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

/// Two jobs per thread, then the tallies. As kept voxel p (scattered order): its place v in the key order, the
/// CPU backend's per-run body at v, and its slot and bucket emptied. As point i: the out-of-range and
/// no-slot counts, and when i owns a dropped voxel, its drops and its slot emptied. Each slot is read and
/// emptied by one thread only, and nothing else in this kernel reads the table or the bucket counters.
template <typename Key>
__global__ void __launch_bounds__(kThreads)
    output_kernel(Table<Key> t, Buckets b, VoxelGrid grid, long long n, const Key* __restrict__ sorted_key,
                  const std::int32_t* __restrict__ sorted_slot, const std::int32_t* __restrict__ span,
                  const std::int32_t* __restrict__ point_slot, const std::int32_t* __restrict__ owner,
                  const float* __restrict__ xyz, int aggregate, unsigned long long* tally, Outputs out) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  unsigned long long over_points = 0, over_voxels = 0, outside = 0, no_slot = 0;
  if (i < static_cast<long long>(tally[kKeptCount])) {
    const std::int32_t s = sorted_slot[i];
    const Key key = sorted_key[i];
    const std::int32_t start = span[2 * i], end = span[2 * i + 1];
    std::int32_t v = start;
    for (std::int32_t q = start; q < end; ++q) v += sorted_key[q] < key ? 1 : 0;
    const unsigned length = t.length_of(s);
    const int count = static_cast<int>(min(length, static_cast<unsigned>(t.k)));
    over_points += length - static_cast<unsigned>(count);
    // Indices are below 2^31, so the unsigned members read as int32 unchanged.
    const std::int32_t* members = reinterpret_cast<const std::int32_t*>(t.members_of(s));
    for (int j = 0; j < count; ++j) out.point_voxel[members[j]] = v;
    voxel_coords(grid, key, out.coords + 4 * static_cast<long long>(v));
    out.points_per_voxel[v] = count;
    aggregate_voxel(grid, key, members, count, xyz, aggregate, out.xyz + 3 * static_cast<long long>(v),
                    out.representative + v);
    t.empty(s, count);
    const unsigned long long bucket = static_cast<unsigned long long>(key) >> b.shift;
    b.count[bucket] = 0;
    b.cursor[bucket] = 0;
    b.group[bucket / kGroup] = 0;
  }
  if (i < n) {
    const std::int32_t ps = point_slot[i];
    outside += ps == kOutside ? 1 : 0;
    no_slot += ps == kNoSlot ? 1 : 0;
    const std::int32_t s = owner[i];
    if (s >= 0) {
      const unsigned length = t.length_of(s);
      const unsigned count = min(length, static_cast<unsigned>(t.k));
      over_points += length - count;
      over_voxels += count;
      t.empty(s, static_cast<int>(count));
    }
  }
  add_block(over_points, tally + kOverMaxPoints);
  add_block(over_voxels, tally + kOverMaxVoxels);
  add_block(outside, tally + kOutOfRange);
  add_block(no_slot, tally + kFull);
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
  int k = 0, min_points = 1, aggregate = 0, key_bits = 0, bucket_shift = 0, bucket_groups = 0;
  bool wide = false;  // 64-bit keys
  VoxelGrid grid{};
  const float* xyz = nullptr;
  const std::int32_t* batch = nullptr;
  StreamHandle stream = nullptr;
  unsigned char* table = nullptr;
  std::size_t keys_bytes = 0, length_bytes = 0, members_bytes = 0, table_bytes = 0;
  std::uint64_t capacity = 0, buckets = 0;
  unsigned* bucket_words = nullptr;
  std::int32_t *point_slot = nullptr, *owner = nullptr, *kept_slot = nullptr, *sorted_slot = nullptr, *span = nullptr;
  void* sorted_key = nullptr;
  unsigned long long* tally = nullptr;
  unsigned char* scratch = nullptr;
  std::size_t scan_bytes = 0;
  Outputs out{};
  unsigned long long* tally_host = nullptr;

  bool operator==(const Plan& o) const {
    return n == o.n && cap == o.cap && max_voxels == o.max_voxels && k == o.k && min_points == o.min_points &&
           aggregate == o.aggregate && key_bits == o.key_bits && bucket_shift == o.bucket_shift &&
           bucket_groups == o.bucket_groups && wide == o.wide && same_grid(grid, o.grid) && xyz == o.xyz &&
           batch == o.batch && stream == o.stream && table == o.table && capacity == o.capacity &&
           buckets == o.buckets && bucket_words == o.bucket_words && point_slot == o.point_slot && owner == o.owner &&
           kept_slot == o.kept_slot && sorted_slot == o.sorted_slot && span == o.span && sorted_key == o.sorted_key &&
           tally == o.tally && scratch == o.scratch && scan_bytes == o.scan_bytes && out.coords == o.out.coords &&
           out.points_per_voxel == o.out.points_per_voxel && out.representative == o.out.representative &&
           out.xyz == o.out.xyz && out.point_voxel == o.out.point_voxel && tally_host == o.tally_host;
  }
};

namespace {

template <typename Key>
Table<Key> table_of(const HashVoxels::Plan& p) {
  Table<Key> t;
  t.hash = VoxelHashView<Key>{reinterpret_cast<Key*>(p.table), nullptr, p.capacity - 1};
  t.length = reinterpret_cast<unsigned*>(p.table + p.keys_bytes);
  t.members = reinterpret_cast<unsigned*>(p.table + p.keys_bytes + p.length_bytes);
  t.k = p.k;
  return t;
}

Buckets buckets_of(const HashVoxels::Plan& p) {
  // count [buckets], group [buckets / kGroup], cursor [buckets]; buckets >= kGroup, so each is 128-byte aligned.
  return Buckets{p.bucket_words, p.bucket_words + p.buckets, p.bucket_words + p.buckets + p.buckets / kGroup,
                 p.bucket_shift, p.bucket_groups};
}

template <typename Key>
auto scan_io(const HashVoxels::Plan& p) {
  const Table<Key> t = table_of<Key>(p);
  const FirstOfSurvivor<Key> first{t, p.point_slot, static_cast<unsigned>(p.min_points)};
  const FileVoxel<Key> file{t,       p.point_slot, static_cast<unsigned>(p.min_points),
                            p.n,     p.max_voxels, buckets_of(p),
                            p.owner, p.kept_slot,  p.tally};
  return std::make_pair(thrust::make_transform_iterator(thrust::counting_iterator<int>(0), first),
                        thrust::make_tabulate_output_iterator(file));
}

/// CUB's scan scratch size for n points (a host-side query; no device work).
template <typename Key>
std::size_t scan_scratch(const HashVoxels::Plan& p) {
  const auto [flags, file] = scan_io<Key>(p);
  std::size_t bytes = 0;
  S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, flags, file, static_cast<int>(p.n), p.stream));
  return bytes;
}

/// Queues the whole call on p.stream, ending with the tallies' copy to p.tally_host; no host wait.
template <typename Key>
void enqueue(const HashVoxels::Plan& p) {
  const Table<Key> t = table_of<Key>(p);
  const Buckets b = buckets_of(p);
  const auto [flags, file] = scan_io<Key>(p);
  Key* sorted_key = static_cast<Key*>(p.sorted_key);
  std::size_t scan_bytes = p.scan_bytes;
  insert_kernel<Key><<<blocks_for(p.n), kThreads, 0, p.stream>>>(
      p.xyz, p.batch, p.n, p.grid, t, reinterpret_cast<unsigned*>(p.tally + kSpare), p.point_slot, p.out.point_voxel);
  S3D_CUDA_CHECK_LAUNCH();
  S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(p.scratch, scan_bytes, flags, file, static_cast<int>(p.n), p.stream));
  scatter_kernel<Key><<<blocks_for(p.cap, kScatterThreads), kScatterThreads, 0, p.stream>>>(
      t, b, p.kept_slot, p.max_voxels, p.tally, sorted_key, p.sorted_slot, p.span);
  S3D_CUDA_CHECK_LAUNCH();
  output_kernel<Key><<<blocks_for(p.n), kThreads, 0, p.stream>>>(
      t, b, p.grid, p.n, sorted_key, p.sorted_slot, p.span, p.point_slot, p.owner, p.xyz, p.aggregate, p.tally, p.out);
  S3D_CUDA_CHECK_LAUNCH();
  S3D_CUDA_CHECK(
      cudaMemcpyAsync(p.tally_host, p.tally, kTallies * sizeof(unsigned long long), cudaMemcpyDeviceToHost, p.stream));
}

}  // namespace

HashVoxels::HashVoxels() : plan_(std::make_unique<Plan>()) {}
HashVoxels::~HashVoxels() = default;

namespace {

/// Bits of the largest key (the sentinel) and the buckets' shift (bucket = key >> shift).
int key_bits_of(const VoxelGrid& grid) {
  int bits = 1;
  while (bits < 64 && (1ULL << bits) <= grid.sentinel) ++bits;
  return bits;
}
int bucket_bits_of(int key_bits) { return std::max(5, std::min(kMaxBucketBits, key_bits)); }

constexpr double kMaxOrderWork = double(1 << 26);

}  // namespace

bool HashVoxels::applies(const VoxelRequest& r) {
  if (r.max_points_per_voxel < 1 || r.max_points_per_voxel > kMaxPoints || r.points.size >= (std::size_t{1} << 29))
    return false;
  const double n = static_cast<double>(r.points.size);
  const double kept = r.max_voxels > 0 ? std::min(static_cast<double>(r.max_voxels), n) : n;
  const int key_bits = key_bits_of(r.grid);
  const double span = std::ldexp(1.0, key_bits - bucket_bits_of(key_bits));
  return kept * std::min(span, kept) <= kMaxOrderWork;
}

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
  p.key_bits = key_bits_of(r.grid);
  // Buckets: the keys' top bits, at most 2^16 of them (the scatter's group prefix fits one block), at least
  // one group. Keys are below the sentinel < 2^key_bits, so key >> shift < buckets.
  const int bucket_bits = bucket_bits_of(p.key_bits);
  p.bucket_shift = std::max(0, p.key_bits - bucket_bits);
  p.buckets = std::uint64_t{1} << bucket_bits;
  p.bucket_groups = static_cast<int>(p.buckets / kGroup);
  // 32-bit keys (half the table traffic) whenever every key and the empty marker fit.
  p.wide = r.grid.sentinel >= 0xffffffffULL;
  const std::size_t key_size = p.wide ? 8 : 4;
  p.capacity = 1;
  while (p.capacity < 2 * static_cast<std::uint64_t>(p.n)) p.capacity <<= 1;  // load factor <= 0.5
  p.keys_bytes = align_up(p.capacity * key_size);
  p.length_bytes = align_up(p.capacity * 4);
  p.members_bytes = align_up(p.capacity * static_cast<std::size_t>(p.k) * 4);
  p.table_bytes = p.keys_bytes + p.length_bytes + p.members_bytes;
  const std::size_t bucket_words = 2 * p.buckets + p.buckets / kGroup;

  const std::size_t n = static_cast<std::size_t>(p.n), cap = static_cast<std::size_t>(p.cap);
  const unsigned char* old_table = table_.data();
  const unsigned* old_buckets = buckets_.data();
  table_.resize(p.table_bytes, stream);
  buckets_.resize(bucket_words, stream);
  if (table_.data() != old_table) table_ready_ = 0;  // reallocated: contents undefined
  if (buckets_.data() != old_buckets) buckets_ready_ = 0;
  tally_.resize(kTallies, stream);
  point_slot_.resize(n, stream);
  owner_.resize(n, stream);
  kept_slot_.resize(cap, stream);
  sorted_slot_.resize(cap, stream);
  span_.resize(2 * cap, stream);
  sorted_key_.resize(cap, stream);  // 8-byte elements hold either key width
  point_voxel_.resize(n, stream);
  coords_.resize(4 * cap, stream);
  per_voxel_.resize(cap, stream);
  representative_.resize(cap, stream);
  out_xyz_.resize(3 * cap, stream);
  tally_host_.resize(kTallies);
  p.table = table_.data();
  p.bucket_words = buckets_.data();
  p.tally = tally_.data();
  p.point_slot = point_slot_.data();
  p.owner = owner_.data();
  p.kept_slot = kept_slot_.data();
  p.sorted_slot = sorted_slot_.data();
  p.span = span_.data();
  p.sorted_key = sorted_key_.data();
  p.out = Outputs{coords_.data(), per_voxel_.data(), representative_.data(), out_xyz_.data(), point_voxel_.data()};
  p.tally_host = tally_host_.data();
  // CUB's scratch query costs host time: only for a larger n than any before (a larger scratch serves any n).
  if (p.n > scan_sized_for_) {
    p.scan_bytes = std::max(p.scan_bytes, p.wide ? scan_scratch<unsigned long long>(p) : scan_scratch<unsigned>(p));
    scan_sized_for_ = p.n;
  }
  scratch_.resize(std::max<std::size_t>(p.scan_bytes, 1), stream);
  p.scratch = scratch_.data();

  // The table and bucket counters must start empty; a completed call leaves them so, and only what no call has
  // emptied yet (new or grown memory, or a call that failed midway) needs a memset.
  const std::size_t table_ready = table_ready_, buckets_ready = buckets_ready_;
  table_ready_ = buckets_ready_ = 0;  // until this call completes
  if (p.table_bytes > table_ready) S3D_CUDA_CHECK(cudaMemsetAsync(p.table, 0xff, p.table_bytes, stream));
  if (bucket_words * sizeof(unsigned) > buckets_ready)
    S3D_CUDA_CHECK(cudaMemsetAsync(p.bucket_words, 0, bucket_words * sizeof(unsigned), stream));

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
  // Every slot and bucket this call used is empty again (even when a probe found no free slot: every filled
  // slot has an owner, which empties it).
  table_ready_ = std::max(table_ready, p.table_bytes);
  buckets_ready_ = std::max(buckets_ready, bucket_words * sizeof(unsigned));
  const unsigned long long* tally = tally_host_.data();
  if (tally[kFull] != 0) throw CudaError("voxelize: the voxel hash table is full");

  DeviceVoxels d;
  d.count = static_cast<std::int64_t>(tally[kKeptCount]);
  d.dropped_out_of_range = static_cast<std::int64_t>(tally[kOutOfRange]);
  d.dropped_over_max_points = static_cast<std::int64_t>(tally[kOverMaxPoints]);
  d.dropped_over_max_voxels = static_cast<std::int64_t>(tally[kOverMaxVoxels]);
  d.coords = coords_.data();
  d.point_voxel = point_voxel_.data();
  d.points_per_voxel = per_voxel_.data();
  d.representative = representative_.data();
  d.xyz = out_xyz_.data();
  return d;
}

}  // namespace s3d::points::detail
