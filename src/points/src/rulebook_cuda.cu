// RulebookEngine, CUDA backend: the CPU oracle's steps as data-parallel passes, every order fixed by sorts
// and scans (no atomic decides a position):
//  1. insert the input keys into the hash table (one thread per row; duplicates and a full table flagged);
//  2. regular conv only: per-input candidate counts, an exclusive scan, the candidate output keys, a radix
//     sort and unique: the outputs in linear order;
//  3. one thread per (offset, output) finds the input that output reads there -> map[K][N_out] (-1 = none);
//  4. an exclusive scan of the map's hits gives every pair its slot: offset-major, output order inside.
// Host round trips: the status flags and the candidate count (regular), the output count, the pair count.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdint>
#include <cub/cub.cuh>
#include <string>
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

__global__ void count_candidates_kernel(const int4* __restrict__ coords, long long m, ConvGeometry g,
                                        std::int32_t* counts) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r > m) return;
  if (r == m) {
    counts[r] = 0;
    return;
  }
  const int4 c = coords[r];
  const std::int32_t in[3] = {c.y, c.z, c.w};
  std::int32_t o[3];
  std::int32_t n = 0;
  for (int k = 0; k < g.kernel_volume; ++k) n += output_at(g, in, k, o) ? 1 : 0;
  counts[r] = n;
}

template <typename Key>
__global__ void write_candidates_kernel(const int4* __restrict__ coords, long long m, ConvGeometry g,
                                        const std::int32_t* __restrict__ starts, Key* candidates) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= m) return;
  const int4 c = coords[r];
  const std::int32_t in[3] = {c.y, c.z, c.w};
  std::int32_t o[3];
  std::int32_t slot = starts[r];
  for (int k = 0; k < g.kernel_volume; ++k)
    if (output_at(g, in, k, o)) candidates[slot++] = static_cast<Key>(linear_key(g.out_shape, c.x, o[0], o[1], o[2]));
}

template <typename Key>
__global__ void decode_kernel(const Key* __restrict__ keys, long long n, ConvGeometry g, int4* coords) {
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  std::int32_t c[4];
  decode_key(keys[r], g.out_shape, c);
  coords[r] = make_int4(c[0], c[1], c[2], c[3]);
}

/// map[k * n_out + o] = the input row output o reads at offset k, or -1; map[K * n_out] = -1 (the scan's end).
template <typename Key>
__global__ void map_kernel(const int4* __restrict__ out_coords, long long n_out, ConvGeometry g,
                           VoxelHashView<Key> table, std::int32_t* map) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long slots = n_out * g.kernel_volume;
  if (t > slots) return;
  if (t == slots) {
    map[t] = -1;
    return;
  }
  const int k = static_cast<int>(t / n_out);
  const int4 o = out_coords[t - k * n_out];
  const std::int32_t oc[3] = {o.y, o.z, o.w};
  std::int32_t i[3];
  std::int32_t row = -1;
  if (input_at(g, oc, k, i)) row = table.find(static_cast<Key>(linear_key(g.in_shape, o.x, i[0], i[1], i[2])));
  map[t] = row;
}

struct IsPair {
  const std::int32_t* map;
  __host__ __device__ std::int32_t operator()(long long t) const { return map[t] >= 0 ? 1 : 0; }
};

__global__ void scatter_kernel(const std::int32_t* __restrict__ map, const std::int32_t* __restrict__ slot,
                               long long n_out, long long slots, std::int32_t* in_index, std::int32_t* out_index) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (t >= slots) return;
  const std::int32_t row = map[t];
  if (row < 0) return;
  const std::int32_t p = slot[t];
  in_index[p] = row;
  out_index[p] = static_cast<std::int32_t>(t % n_out);
}

__global__ void offsets_kernel(const std::int32_t* __restrict__ slot, long long n_out, int kernel_volume,
                               std::int64_t* offsets) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k <= kernel_volume) offsets[k] = slot[k * n_out];
}

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
    status_.resize(1, st);
    S3D_CUDA_CHECK(cudaMemsetAsync(table_keys_.data(), 0xff, capacity * sizeof(Key), st));
    S3D_CUDA_CHECK(cudaMemsetAsync(status_.data(), 0, sizeof(unsigned), st));
    const VoxelHashView<Key> table{reinterpret_cast<Key*>(table_keys_.data()), table_rows_.data(), capacity - 1};
    if (m > 0) {
      insert_kernel<Key><<<blocks_for(m), kThreads, 0, st>>>(as_int4(coords), m, g, table, status_.data());
      S3D_CUDA_CHECK_LAUNCH();
    }
    unsigned status = 0;
    status_.copy_to_host_async(&status, 1, st);
    long long n_out = m;
    const int4* out_coords = as_int4(coords);
    if (!subm && m > 0) {
      const std::uint64_t out_cells =
          static_cast<std::uint64_t>(g.batch_size) * g.out_shape[0] * g.out_shape[1] * g.out_shape[2];
      n_out = out_cells >= 0xffffffffULL ? candidates_to_outputs<unsigned long long>(coords, m, g, out_cells)
                                         : candidates_to_outputs<unsigned int>(coords, m, g, out_cells);
      out_coords = as_int4(out_coords_.data());
    } else {
      stream_.synchronize();
    }
    if (status & (kCoordOutside | kHashDuplicate)) throw_bad_rows(coords, m, in);
    if (status & kHashFull) throw_table_full(capacity);
    if (static_cast<long long>(g.kernel_volume) * n_out >= INT32_MAX)
      throw DataError("kernel volume x output voxels exceeds 2^31 - 1 rulebook slots");

    const long long slots = n_out * g.kernel_volume;
    map_.resize(static_cast<std::size_t>(slots) + 1, st);
    slot_.resize(static_cast<std::size_t>(slots) + 1, st);
    offsets_.resize(static_cast<std::size_t>(g.kernel_volume) + 1, st);
    map_kernel<Key><<<blocks_for(slots + 1), kThreads, 0, st>>>(out_coords, n_out, g, table, map_.data());
    S3D_CUDA_CHECK_LAUNCH();
    const auto hits = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), IsPair{map_.data()});
    std::size_t scan_bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, hits, slot_.data(), slots + 1, st));
    scratch_.resize(std::max<std::size_t>(scan_bytes, 1), st);
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch_.data(), scan_bytes, hits, slot_.data(), slots + 1, st));
    offsets_kernel<<<static_cast<unsigned>((g.kernel_volume + 1 + 127) / 128), 128, 0, st>>>(
        slot_.data(), n_out, g.kernel_volume, offsets_.data());
    S3D_CUDA_CHECK_LAUNCH();
    DeviceRulebook rb;
    rb.kernel_volume = g.kernel_volume;
    rb.inputs = m;
    rb.outputs = n_out;
    for (int a = 0; a < 3; ++a) rb.out_shape[a] = static_cast<std::int32_t>(g.out_shape[a]);
    rb.offsets.resize(static_cast<std::size_t>(g.kernel_volume) + 1);
    offsets_.copy_to_host_async(rb.offsets.data(), rb.offsets.size(), st);
    stream_.synchronize();
    const long long pairs = rb.offsets.back();
    in_index_.resize(static_cast<std::size_t>(std::max<long long>(pairs, 1)), st);
    out_index_.resize(static_cast<std::size_t>(std::max<long long>(pairs, 1)), st);
    if (slots > 0) {
      scatter_kernel<<<blocks_for(slots), kThreads, 0, st>>>(map_.data(), slot_.data(), n_out, slots, in_index_.data(),
                                                             out_index_.data());
      S3D_CUDA_CHECK_LAUNCH();
    }
    stream_.synchronize();
    rb.out_coords = reinterpret_cast<const std::int32_t*>(out_coords);
    rb.in_index = in_index_.data();
    rb.out_index = out_index_.data();
    return rb;
  }

  /// Regular conv: the sorted unique output keys, decoded into out_coords_. Returns their count (synchronizes).
  template <typename OutKey>
  long long candidates_to_outputs(const std::int32_t* coords, long long m, const ConvGeometry& g,
                                  std::uint64_t out_cells) {
    cudaStream_t st = stream_.get();
    counts_.resize(static_cast<std::size_t>(m) + 1, st);
    starts_.resize(static_cast<std::size_t>(m) + 1, st);
    count_candidates_kernel<<<blocks_for(m + 1), kThreads, 0, st>>>(as_int4(coords), m, g, counts_.data());
    S3D_CUDA_CHECK_LAUNCH();
    std::size_t bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts_.data(), starts_.data(), m + 1, st));
    scratch_.resize(std::max<std::size_t>(bytes, 1), st);
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch_.data(), bytes, counts_.data(), starts_.data(), m + 1, st));
    std::int32_t total = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(&total, starts_.data() + m, sizeof total, cudaMemcpyDeviceToHost, st));
    stream_.synchronize();
    if (total == 0) return 0;
    candidates_.resize(2 * static_cast<std::size_t>(total) * sizeof(OutKey), st);
    OutKey* keys = reinterpret_cast<OutKey*>(candidates_.data());
    write_candidates_kernel<OutKey><<<blocks_for(m), kThreads, 0, st>>>(as_int4(coords), m, g, starts_.data(), keys);
    S3D_CUDA_CHECK_LAUNCH();
    const int end_bit = bits_for(out_cells - 1);
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, keys + total, total, 0, end_bit, st));
    std::size_t unique_bytes = 0;
    selected_.resize(1, st);
    S3D_CUDA_CHECK(cub::DeviceSelect::Unique(nullptr, unique_bytes, keys + total, keys, selected_.data(), total, st));
    scratch_.resize(std::max<std::size_t>(std::max(bytes, unique_bytes), 1), st);
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(scratch_.data(), bytes, keys, keys + total, total, 0, end_bit, st));
    S3D_CUDA_CHECK(
        cub::DeviceSelect::Unique(scratch_.data(), unique_bytes, keys + total, keys, selected_.data(), total, st));
    long long n_out = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(&n_out, selected_.data(), sizeof n_out, cudaMemcpyDeviceToHost, st));
    stream_.synchronize();
    out_coords_.resize(static_cast<std::size_t>(std::max<long long>(n_out, 1)) * 4, st);
    decode_kernel<OutKey><<<blocks_for(n_out), kThreads, 0, st>>>(keys, n_out, g, as_int4(out_coords_.data()));
    S3D_CUDA_CHECK_LAUNCH();
    return n_out;
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
  DeviceBuffer<unsigned char> table_keys_, candidates_, scratch_;
  DeviceBuffer<std::int32_t> table_rows_, counts_, starts_, map_, slot_, in_index_, out_index_;
  DeviceBuffer<unsigned> status_;
  DeviceBuffer<long long> selected_;
  DeviceBuffer<std::int64_t> offsets_;
};

}  // namespace

std::unique_ptr<RulebookEngine::Impl> make_cuda_rulebook(const Device& device) {
  return std::make_unique<CudaRulebook>(device);
}

}  // namespace s3d::points::detail
