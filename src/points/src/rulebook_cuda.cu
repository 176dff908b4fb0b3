// RulebookEngine, CUDA backend: the CPU oracle's steps as data-parallel passes, every order fixed by a sort
// or a stable selection (no atomic decides a position):
//  1. insert the input keys into the hash table (one thread per row; rows outside the grid, duplicates and a
//     full table flagged);
//  2. regular conv only: one thread per (input, offset) inserts the output key it reaches into a key-only
//     table and appends the new ones to a list (in atomic order), which a radix sort puts in linear order;
//  3. one thread per (offset, output) finds the input that output reads there -> map[K][N_out] (-1 = none)
//     and counts the hits per offset. Submanifold kernels are symmetric: offsets k < K / 2 are looked up and
//     each hit (in j, out i) is also written as (in i, out j) at K - 1 - k; the centre is i -> i;
//  4. a stable selection (CUB DeviceSelect) of the map's hits writes the pairs: offset-major, output order.
// Host round trips: one at the end (counts, flags), plus one for the output count of a regular conv. The
// pair buffers hold K x N_out slots, so nothing waits for the pair count.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/tuple.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <string>
#include <utility>
#include <vector>

#include "rulebook_impl.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"
#include "voxel_hash.cuh"

namespace s3d::points::detail {
namespace {

constexpr int kThreads = 256;
// Byte offsets in the header block of one build (see resident_with).
constexpr std::size_t kHeaderOutputs = 8, kHeaderSelected = 16, kHeaderCounts = 24;

unsigned blocks_for(long long n) {
  return static_cast<unsigned>(std::max<long long>(1, (n + kThreads - 1) / kThreads));
}

int bits_for(std::uint64_t largest) {
  int bits = 1;
  while (bits < 64 && (largest >> bits) != 0) ++bits;
  return bits;
}

template <typename Key>
__global__ void insert_kernel(const int4* __restrict__ coords, long long m, ConvGeometry g, VoxelHashView<Key> table,
                              unsigned* status) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= m) return;
  const int4 c = coords[r];
  if (c.x < 0 || c.x >= g.batch_size || c.y < 0 || c.y >= g.in_shape[0] || c.z < 0 || c.z >= g.in_shape[1] || c.w < 0 ||
      c.w >= g.in_shape[2]) {
    atomicOr(status, kCoordOutside);
    return;
  }
  table.insert(static_cast<Key>(linear_key(g.in_shape, c.x, c.y, c.z, c.w)), static_cast<std::int32_t>(r), status);
}

template <typename Key>
__global__ void insert_keys_kernel(const Key* __restrict__ keys, long long n, VoxelHashView<Key> table,
                                   unsigned* status) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r < n) table.insert(keys[r], static_cast<std::int32_t>(r), status);
}

template <typename Key>
__global__ void find_keys_kernel(const Key* __restrict__ keys, long long n, VoxelHashView<Key> table,
                                 std::int32_t* rows) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r < n) rows[r] = table.find(keys[r]);
}

/// Regular conv: one thread per (input, offset) inserts the output key it reaches; each key's first insert
/// appends it to `unique` (atomic order: sorted afterwards).
template <typename Key>
__global__ void insert_outputs_kernel(const int4* __restrict__ coords, long long m, ConvGeometry g,
                                      VoxelHashView<Key> outputs, Key* unique, unsigned long long* unique_count,
                                      unsigned* status) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (t >= m * g.kernel_volume) return;
  const int k = static_cast<int>(t / m);
  const int4 c = coords[t - k * m];
  const std::int32_t in[3] = {c.y, c.z, c.w};
  std::int32_t o[3];
  if (!output_at(g, in, k, o)) return;
  const Key key = static_cast<Key>(linear_key(g.out_shape, c.x, o[0], o[1], o[2]));
  if (outputs.insert_new(key, status)) unique[atomicAdd(unique_count, 1ULL)] = key;
}

template <typename Key>
__global__ void decode_kernel(const Key* __restrict__ keys, long long n, ConvGeometry g, int4* coords) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  std::int32_t c[4];
  decode_key(keys[r], g.out_shape, c);
  coords[r] = make_int4(c[0], c[1], c[2], c[3]);
}

/// Adds the warp's hits to counts[k] with one atomic per distinct k in the warp. Every lane of the warp calls.
__device__ __forceinline__ void count_hits(int k, bool hit, std::int32_t* counts) {
  const unsigned lanes = __ballot_sync(0xffffffffu, hit);
  const unsigned same = __match_any_sync(0xffffffffu, k);
  const unsigned lane = threadIdx.x % 32;
  if (lane == static_cast<unsigned>(__ffs(same) - 1)) {
    const int n = __popc(lanes & same);
    if (n > 0) atomicAdd(counts + k, n);
  }
}

/// map[k * n_out + o] = the input row output o reads at offset k (-1 = none); counts[k] += hits.
/// `symmetric` (submanifold): only k < K / 2 is looked up; a hit also fills the mirrored entry, and the centre
/// offset maps every row to itself (map must start at -1).
template <typename Key, bool kSymmetric>
__global__ void map_kernel(const int4* __restrict__ out_coords, long long n_out, ConvGeometry g,
                           VoxelHashView<Key> table, std::int32_t* map, std::int32_t* counts) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int searched = kSymmetric ? g.kernel_volume / 2 + 1 : g.kernel_volume;
  const bool active = t < n_out * searched;
  const int k = active ? static_cast<int>(t / n_out) : 0;
  std::int32_t row = -1;
  long long o = 0;
  if (active) {
    o = t - k * n_out;
    if (kSymmetric && k == g.kernel_volume / 2) {
      row = static_cast<std::int32_t>(o);
    } else {
      const int4 oc = out_coords[o];
      const std::int32_t at[3] = {oc.y, oc.z, oc.w};
      std::int32_t i[3];
      if (input_at(g, at, k, i)) row = table.find(static_cast<Key>(linear_key(g.in_shape, oc.x, i[0], i[1], i[2])));
    }
    if (!kSymmetric || row >= 0 || k == g.kernel_volume / 2) map[t] = row;
    if (kSymmetric && row >= 0 && k != g.kernel_volume / 2)
      map[static_cast<long long>(g.kernel_volume - 1 - k) * n_out + row] = static_cast<std::int32_t>(o);
  }
  count_hits(k, row >= 0, counts);
}

struct IsPair {
  const std::int32_t* map;
  __host__ __device__ bool operator()(long long t) const { return map[t] >= 0; }
};

/// Slot t of the map as its pair (input row, output row).
struct PairOfSlot {
  const std::int32_t* map;
  long long n_out;
  __host__ __device__ thrust::tuple<std::int32_t, std::int32_t> operator()(long long t) const {
    return thrust::make_tuple(map[t], static_cast<std::int32_t>(t % n_out));
  }
};

class CudaRulebook final : public RulebookEngine::Impl {
 public:
  explicit CudaRulebook(const Device& device) : Impl(device) {}

  void build(const SparseCoords& in, const ConvGeometry& g, bool subm, Rulebook* rb) override {
    ScopedDevice on(device_.index());
    cudaStream_t st = stream_.get();
    const long long m = in.count();
    coords_.resize(static_cast<std::size_t>(std::max<long long>(m, 1)) * 4, st);
    coords_.copy_from_host_async(in.coords.data(), in.coords.size(), st);
    const DeviceRulebook d = resident(coords_.data(), m, in, g, subm);
    rb->offsets = d.offsets;
    const std::size_t pairs = static_cast<std::size_t>(d.offsets.back());
    rb->in_index.resize(pairs);
    rb->out_index.resize(pairs);
    S3D_CUDA_CHECK(
        cudaMemcpyAsync(rb->in_index.data(), d.in_index, pairs * sizeof(std::int32_t), cudaMemcpyDeviceToHost, st));
    S3D_CUDA_CHECK(
        cudaMemcpyAsync(rb->out_index.data(), d.out_index, pairs * sizeof(std::int32_t), cudaMemcpyDeviceToHost, st));
    if (subm) {
      rb->out.coords = in.coords;
    } else {
      rb->out.coords.resize(static_cast<std::size_t>(4 * d.outputs));
      S3D_CUDA_CHECK(cudaMemcpyAsync(rb->out.coords.data(), d.out_coords, rb->out.coords.size() * sizeof(std::int32_t),
                                     cudaMemcpyDeviceToHost, st));
    }
    stream_.synchronize();
    rb->counts.resize(static_cast<std::size_t>(g.kernel_volume));
    for (std::size_t k = 0; k < rb->counts.size(); ++k)
      rb->counts[k] = static_cast<std::int32_t>(rb->offsets[k + 1] - rb->offsets[k]);
  }

  DeviceRulebook build_device(const std::int32_t* coords, std::int64_t count, const SparseCoords& shape_only,
                              const ConvGeometry& g, bool subm) override {
    ScopedDevice on(device_.index());
    return resident(coords, count, shape_only, g, subm);
  }

  std::vector<std::int32_t> probe_table(const std::vector<std::uint64_t>& keys, std::uint64_t capacity,
                                        const std::vector<std::uint64_t>& queries) override {
    ScopedDevice on(device_.index());
    bool wide = false;
    for (std::uint64_t k : keys) wide = wide || k >= 0xffffffffULL;
    for (std::uint64_t k : queries) wide = wide || k >= 0xffffffffULL;
    return wide ? probe_with<unsigned long long>(keys, capacity, queries)
                : probe_with<unsigned int>(keys, capacity, queries);
  }

 private:
  /// The rulebook of device-memory `coords`; `in` gives the shape and batch (and, when it holds them, the
  /// host rows for error messages).
  DeviceRulebook resident(const std::int32_t* coords, long long m, const SparseCoords& in, const ConvGeometry& g,
                          bool subm) {
    const std::uint64_t in_cells =
        static_cast<std::uint64_t>(g.batch_size) * g.in_shape[0] * g.in_shape[1] * g.in_shape[2];
    return in_cells >= 0xffffffffULL ? resident_with<unsigned long long>(coords, m, in, g, subm)
                                     : resident_with<unsigned int>(coords, m, in, g, subm);
  }

  /// Names the first bad row: from the host rows when `in` has them, else from a copy of the device rows.
  [[noreturn]] void throw_bad_rows(const std::int32_t* coords, long long m, const SparseCoords& in) {
    SparseCoords rows = in;
    if (rows.count() != m) {
      rows.coords.resize(static_cast<std::size_t>(4 * m));
      S3D_CUDA_CHECK(cudaMemcpyAsync(rows.coords.data(), coords, rows.coords.size() * sizeof(std::int32_t),
                                     cudaMemcpyDeviceToHost, stream_.get()));
      stream_.synchronize();
    }
    check_rows(rows);
    throw_duplicate(rows, first_duplicate_row(rows));
  }

  template <typename Key>
  DeviceRulebook resident_with(const std::int32_t* coords, long long m, const SparseCoords& in, const ConvGeometry& g,
                               bool subm) {
    cudaStream_t st = stream_.get();
    const std::uint64_t capacity = hash_capacity(m);
    table_keys_.resize(capacity * sizeof(Key), st);
    table_rows_.resize(capacity, st);
    // One small block the host reads back at the end: [status u32, pad, output count u64, pair count i64,
    // counts i32[K]]; cleared with one memset, read with one copy.
    const std::size_t header_bytes = kHeaderCounts + sizeof(std::int32_t) * static_cast<std::size_t>(g.kernel_volume);
    header_.resize(header_bytes, st);
    S3D_CUDA_CHECK(cudaMemsetAsync(table_keys_.data(), 0xff, capacity * sizeof(Key), st));
    S3D_CUDA_CHECK(cudaMemsetAsync(header_.data(), 0, header_bytes, st));
    unsigned* status = reinterpret_cast<unsigned*>(header_.data());
    std::int32_t* counts_d = reinterpret_cast<std::int32_t*>(header_.data() + kHeaderCounts);
    long long* selected = reinterpret_cast<long long*>(header_.data() + kHeaderSelected);
    const VoxelHashView<Key> table{reinterpret_cast<Key*>(table_keys_.data()), table_rows_.data(), capacity - 1};
    if (m > 0) {
      insert_kernel<Key><<<blocks_for(m), kThreads, 0, st>>>(as_int4(coords), m, g, table, status);
      S3D_CUDA_CHECK_LAUNCH();
    }
    long long n_out = m;
    const int4* out_coords = as_int4(coords);
    if (!subm && m > 0) {
      const std::uint64_t out_cells =
          static_cast<std::uint64_t>(g.batch_size) * g.out_shape[0] * g.out_shape[1] * g.out_shape[2];
      n_out = out_cells >= 0xffffffffULL ? outputs_of<unsigned long long>(coords, m, g, out_cells)
                                         : outputs_of<unsigned int>(coords, m, g, out_cells);
      out_coords = as_int4(out_coords_.data());
    }
    if (static_cast<long long>(g.kernel_volume) * n_out >= INT32_MAX) {
      unsigned flags = 0;
      S3D_CUDA_CHECK(cudaMemcpyAsync(&flags, status, sizeof flags, cudaMemcpyDeviceToHost, st));
      stream_.synchronize();
      raise(flags, coords, m, in, capacity);
      throw DataError("kernel volume x output voxels exceeds 2^31 - 1 rulebook slots");
    }

    const long long slots = n_out * g.kernel_volume;
    const bool symmetric = subm && g.kernel_volume > 1;
    map_.resize(static_cast<std::size_t>(std::max<long long>(slots, 1)), st);
    in_index_.resize(static_cast<std::size_t>(std::max<long long>(slots, 1)), st);
    out_index_.resize(static_cast<std::size_t>(std::max<long long>(slots, 1)), st);
    if (slots > 0) {
      if (symmetric) {
        S3D_CUDA_CHECK(cudaMemsetAsync(map_.data(), 0xff, static_cast<std::size_t>(slots) * sizeof(std::int32_t), st));
        map_kernel<Key, true><<<blocks_for(n_out * (g.kernel_volume / 2 + 1)), kThreads, 0, st>>>(
            out_coords, n_out, g, table, map_.data(), counts_d);
      } else {
        map_kernel<Key, false>
            <<<blocks_for(slots), kThreads, 0, st>>>(out_coords, n_out, g, table, map_.data(), counts_d);
      }
      S3D_CUDA_CHECK_LAUNCH();
      const auto pairs_out = thrust::make_transform_output_iterator(
          thrust::make_zip_iterator(thrust::make_tuple(in_index_.data(), out_index_.data())),
          PairOfSlot{map_.data(), n_out});
      const thrust::counting_iterator<long long> slot(0);
      std::size_t bytes = 0;
      S3D_CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, slot, pairs_out, selected, slots, IsPair{map_.data()}, st));
      scratch_.resize(std::max<std::size_t>(bytes, 1), st);
      S3D_CUDA_CHECK(
          cub::DeviceSelect::If(scratch_.data(), bytes, slot, pairs_out, selected, slots, IsPair{map_.data()}, st));
    }
    host_header_.resize(header_bytes);
    S3D_CUDA_CHECK(cudaMemcpyAsync(host_header_.data(), header_.data(), header_bytes, cudaMemcpyDeviceToHost, st));
    stream_.synchronize();
    unsigned flags = 0;
    long long pairs = 0;
    std::vector<std::int32_t> counts(static_cast<std::size_t>(g.kernel_volume));
    std::memcpy(&flags, host_header_.data(), sizeof flags);
    std::memcpy(&pairs, host_header_.data() + kHeaderSelected, sizeof pairs);
    std::memcpy(counts.data(), host_header_.data() + kHeaderCounts, counts.size() * sizeof(std::int32_t));
    raise(flags, coords, m, in, capacity);

    DeviceRulebook rb;
    rb.kernel_volume = g.kernel_volume;
    rb.inputs = m;
    rb.outputs = n_out;
    for (int a = 0; a < 3; ++a) rb.out_shape[a] = static_cast<std::int32_t>(g.out_shape[a]);
    if (symmetric)
      for (int k = 0; k < g.kernel_volume / 2; ++k)
        counts[static_cast<std::size_t>(g.kernel_volume - 1 - k)] = counts[k];
    rb.offsets.assign(static_cast<std::size_t>(g.kernel_volume) + 1, 0);
    for (std::size_t k = 0; k < counts.size(); ++k) rb.offsets[k + 1] = rb.offsets[k] + counts[k];
    if (rb.offsets.back() != pairs)
      throw CudaError("rulebook: " + std::to_string(pairs) + " pairs selected but the offsets count " +
                      std::to_string(rb.offsets.back()));
    rb.out_coords = reinterpret_cast<const std::int32_t*>(out_coords);
    rb.in_index = in_index_.data();
    rb.out_index = out_index_.data();
    return rb;
  }

  /// Turns the insert flags into errors.
  void raise(unsigned flags, const std::int32_t* coords, long long m, const SparseCoords& in, std::uint64_t capacity) {
    if (flags & (kCoordOutside | kHashDuplicate)) throw_bad_rows(coords, m, in);
    if (flags & kHashFull) throw_table_full(capacity);
  }

  /// Regular conv: the output keys in a key-only table, their list sorted and decoded into out_coords_.
  /// Returns the output count (synchronizes).
  template <typename OutKey>
  long long outputs_of(const std::int32_t* coords, long long m, const ConvGeometry& g, std::uint64_t out_cells) {
    cudaStream_t st = stream_.get();
    // Outputs one input can reach: per axis, the taps t with t * d = i + p (mod s) are s / gcd(s, d) apart.
    std::uint64_t reach = 1;
    for (int a = 0; a < 3; ++a) {
      int x = g.stride[a], y = g.dilation[a];  // gcd(s, d)
      while (y != 0) {
        x %= y;
        std::swap(x, y);
      }
      const int apart = g.stride[a] / x;
      reach *= static_cast<std::uint64_t>((g.kernel[a] + apart - 1) / apart);
    }
    const std::uint64_t most = std::min<std::uint64_t>(static_cast<std::uint64_t>(m) * reach, out_cells);
    const std::uint64_t capacity = hash_capacity(static_cast<std::int64_t>(most));
    out_keys_.resize(capacity * sizeof(OutKey), st);
    candidates_.resize(2 * most * sizeof(OutKey), st);
    S3D_CUDA_CHECK(cudaMemsetAsync(out_keys_.data(), 0xff, capacity * sizeof(OutKey), st));
    const VoxelHashView<OutKey> outputs{reinterpret_cast<OutKey*>(out_keys_.data()), nullptr, capacity - 1};
    OutKey* unique = reinterpret_cast<OutKey*>(candidates_.data());
    unsigned long long* count = reinterpret_cast<unsigned long long*>(header_.data() + kHeaderOutputs);
    insert_outputs_kernel<OutKey><<<blocks_for(m * g.kernel_volume), kThreads, 0, st>>>(
        as_int4(coords), m, g, outputs, unique, count, reinterpret_cast<unsigned*>(header_.data()));
    S3D_CUDA_CHECK_LAUNCH();
    unsigned long long n_out = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(&n_out, count, sizeof n_out, cudaMemcpyDeviceToHost, st));
    stream_.synchronize();
    if (n_out == 0) return 0;
    const long long n = static_cast<long long>(n_out);
    const int end_bit = bits_for(out_cells - 1);
    std::size_t bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, unique, unique + most, n, 0, end_bit, st));
    scratch_.resize(std::max<std::size_t>(bytes, 1), st);
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(scratch_.data(), bytes, unique, unique + most, n, 0, end_bit, st));
    out_coords_.resize(static_cast<std::size_t>(n) * 4, st);
    decode_kernel<OutKey><<<blocks_for(n), kThreads, 0, st>>>(unique + most, n, g, as_int4(out_coords_.data()));
    S3D_CUDA_CHECK_LAUNCH();
    return n;
  }

  template <typename Key>
  std::vector<std::int32_t> probe_with(const std::vector<std::uint64_t>& keys, std::uint64_t capacity,
                                       const std::vector<std::uint64_t>& queries) {
    cudaStream_t st = stream_.get();
    const long long n = static_cast<long long>(keys.size()), q = static_cast<long long>(queries.size());
    std::vector<Key> narrow(keys.begin(), keys.end()), narrow_queries(queries.begin(), queries.end());
    DeviceBuffer<Key> d_keys(std::max<std::size_t>(keys.size(), 1), st), d_queries(std::max<std::size_t>(q, 1), st);
    DeviceBuffer<std::int32_t> d_rows(std::max<std::size_t>(q, 1), st);
    d_keys.copy_from_host_async(narrow.data(), narrow.size(), st);
    d_queries.copy_from_host_async(narrow_queries.data(), narrow_queries.size(), st);
    table_keys_.resize(capacity * sizeof(Key), st);
    table_rows_.resize(capacity, st);
    status_.resize(1, st);
    S3D_CUDA_CHECK(cudaMemsetAsync(table_keys_.data(), 0xff, capacity * sizeof(Key), st));
    S3D_CUDA_CHECK(cudaMemsetAsync(status_.data(), 0, sizeof(unsigned), st));
    const VoxelHashView<Key> view{reinterpret_cast<Key*>(table_keys_.data()), table_rows_.data(), capacity - 1};
    if (n > 0) {
      insert_keys_kernel<Key><<<blocks_for(n), kThreads, 0, st>>>(d_keys.data(), n, view, status_.data());
      S3D_CUDA_CHECK_LAUNCH();
    }
    unsigned status = 0;
    status_.copy_to_host_async(&status, 1, st);
    stream_.synchronize();
    if (status & kHashFull) throw_table_full(capacity);
    if (status & kHashDuplicate) throw DataError("voxel hash table: key inserted twice");
    std::vector<std::int32_t> rows(queries.size());
    if (q > 0) {
      find_keys_kernel<Key><<<blocks_for(q), kThreads, 0, st>>>(d_queries.data(), q, view, d_rows.data());
      S3D_CUDA_CHECK_LAUNCH();
      d_rows.copy_to_host_async(rows.data(), rows.size(), st);
      stream_.synchronize();
    }
    return rows;
  }

  static const int4* as_int4(const std::int32_t* p) { return reinterpret_cast<const int4*>(p); }
  static int4* as_int4(std::int32_t* p) { return reinterpret_cast<int4*>(p); }

  Stream stream_;
  DeviceBuffer<std::int32_t> coords_, out_coords_;
  DeviceBuffer<unsigned char> table_keys_, out_keys_, candidates_, scratch_, header_;
  DeviceBuffer<std::int32_t> table_rows_, map_, in_index_, out_index_;
  DeviceBuffer<unsigned> status_;
  std::vector<unsigned char> host_header_;
};

}  // namespace

std::unique_ptr<RulebookEngine::Impl> make_cuda_rulebook(const Device& device) {
  return std::make_unique<CudaRulebook>(device);
}

}  // namespace s3d::points::detail
