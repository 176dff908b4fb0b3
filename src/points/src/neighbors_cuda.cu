// NeighborEngine, CUDA backend: the grid is built on the device without a host round trip (bounds -> shape ->
// cell keys -> CUB radix sort -> cell ranges -> sorted copy), then one thread per query runs the shared search.
// Self-queries run in grid order, so a warp's queries are neighbours and read the same cells.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cub/device/device_radix_sort.cuh>

#include "neighbors_impl.hpp"
#include "ordered_float.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/scoped_device.hpp"

namespace s3d::points::detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long long n) {
  return static_cast<unsigned>(std::max<long long>(1, (n + kThreads - 1) / kThreads));
}

__global__ void init_bounds_kernel(int* bounds) {
  if (threadIdx.x < 3)
    bounds[threadIdx.x] = INT_MAX;
  else if (threadIdx.x < 6)
    bounds[threadIdx.x] = INT_MIN;
}

__global__ void bounds_kernel(const float* __restrict__ xyz, long long n, int* bounds) {
  int lo[3] = {INT_MAX, INT_MAX, INT_MAX}, hi[3] = {INT_MIN, INT_MIN, INT_MIN};
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    for (int a = 0; a < 3; ++a) {
      const int v = ordered_float(xyz[3 * i + a]);
      lo[a] = min(lo[a], v);
      hi[a] = max(hi[a], v);
    }
  for (int a = 0; a < 3; ++a) {
    for (int o = 16; o > 0; o >>= 1) {
      lo[a] = min(lo[a], __shfl_xor_sync(0xffffffffu, lo[a], o));
      hi[a] = max(hi[a], __shfl_xor_sync(0xffffffffu, hi[a], o));
    }
    if (threadIdx.x % 32 == 0) {
      atomicMin(bounds + a, lo[a]);
      atomicMax(bounds + 3 + a, hi[a]);
    }
  }
}

__global__ void shape_kernel(const int* bounds, long long n, float points_per_cell, float min_cell, long long max_cells,
                             GridShape* shape) {
  float lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = from_ordered_float(bounds[a]);
    hi[a] = from_ordered_float(bounds[3 + a]);
  }
  *shape = make_grid_shape(lo, hi, n, points_per_cell, min_cell, max_cells);
}

__global__ void cell_keys_kernel(const float* __restrict__ xyz, long long n, const GridShape* __restrict__ shape,
                                 unsigned* __restrict__ keys, std::int32_t* __restrict__ index) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const GridShape s = *shape;
  const int x = grid_coordinate(s, xyz[3 * i], 0), y = grid_coordinate(s, xyz[3 * i + 1], 1),
            z = grid_coordinate(s, xyz[3 * i + 2], 2);
  keys[i] = static_cast<unsigned>(grid_cell(s, x, y, z));
  index[i] = static_cast<std::int32_t>(i);
}

/// begin[c] for every cell: position i starts the cells (key[i-1], key[i]]; position n closes the rest.
__global__ void cell_ranges_kernel(const unsigned* __restrict__ keys, long long n, const GridShape* __restrict__ shape,
                                   std::int32_t* __restrict__ begin) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i > n) return;
  const long long first = i == 0 ? 0 : static_cast<long long>(keys[i - 1]) + 1;
  const long long last = i == n ? shape->cells() : static_cast<long long>(keys[i]);
  for (long long c = first; c <= last; ++c) begin[c] = static_cast<std::int32_t>(i);
}

__global__ void gather_kernel(const float* __restrict__ xyz, long long n, const std::int32_t* __restrict__ index,
                              float4* __restrict__ sorted) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const long long j = index[i];
  sorted[i] = make_float4(xyz[3 * j], xyz[3 * j + 1], xyz[3 * j + 2], 0.f);
}

/// KM > 0: the row lives in the thread's own arrays (K <= KM). KM == 0: in `scratch` (3 arrays of Q*K).
template <int KM>
__global__ void __launch_bounds__(kThreads)
    search_kernel(const GridShape* __restrict__ shape, const std::int32_t* __restrict__ begin,
                  const float4* __restrict__ sorted, const std::int32_t* __restrict__ index,
                  const float* __restrict__ queries, long long query_count, QuerySpec spec, float* scratch,
                  std::int32_t* __restrict__ out_index, float* __restrict__ out_distance,
                  std::int32_t* __restrict__ out_count) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (t >= query_count) return;
  GridView g;
  g.shape = *shape;
  g.begin = begin;
  g.xyz = reinterpret_cast<const float*>(sorted);
  g.index = index;
  long long q = t;
  float qx, qy, qz;
  std::int32_t self = -1;
  if (queries == nullptr) {  // the cloud itself, in grid order
    q = index[t];
    const float4 v = sorted[t];
    qx = v.x, qy = v.y, qz = v.z;
    if (spec.exclude_self) self = static_cast<std::int32_t>(q);
  } else {
    qx = queries[3 * q], qy = queries[3 * q + 1], qz = queries[3 * q + 2];
  }
  std::int32_t* idx_out = out_index ? out_index + q * spec.k : nullptr;
  float* dist_out = out_distance ? out_distance + q * spec.k : nullptr;
  if constexpr (KM > 0) {
    RegisterRow<KM> row(spec.k);
    const int count = search_query(g, spec, qx, qy, qz, self, row);
    if (out_count) out_count[q] = count;
    finish_row<KM>(spec, row, count, idx_out, dist_out);
  } else {
    const long long at = q * spec.k, plane = query_count * spec.k;
    PointerRow row(scratch + at, scratch + plane + at, reinterpret_cast<std::int32_t*>(scratch + 2 * plane) + at,
                   spec.k);
    const int count = search_query(g, spec, qx, qy, qz, self, row);
    if (out_count) out_count[q] = count;
    finish_row<0>(spec, row, count, idx_out, dist_out);
  }
}

/// Ball query with K <= 32, one warp per query: the lanes test 32 consecutive points of a cell at once and the
/// row is spread over the lanes (slot j in lane j), so an insertion is a ballot and a shuffle. Few queries then
/// still fill the GPU, and a cell's points are read coalesced. The answer is the shared definition (first K by
/// (key, index)), which does not depend on the order the candidates arrive in.
__global__ void __launch_bounds__(kThreads)
    ball_warp_kernel(const GridShape* __restrict__ shape, const std::int32_t* __restrict__ begin,
                     const float4* __restrict__ sorted, const std::int32_t* __restrict__ index,
                     const float* __restrict__ queries, long long query_count, QuerySpec spec,
                     std::int32_t* __restrict__ out_index, float* __restrict__ out_distance,
                     std::int32_t* __restrict__ out_count) {
  const long long q = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (q >= query_count) return;  // whole warps leave together
  const GridShape s = *shape;
  const float qx = queries[3 * q], qy = queries[3 * q + 1], qz = queries[3 * q + 2];
  const float reach = sqrtf(spec.radius2) + s.margin;
  const int x0 = grid_coordinate(s, qx - reach, 0), x1 = grid_coordinate(s, qx + reach, 0);
  const int y0 = grid_coordinate(s, qy - reach, 1), y1 = grid_coordinate(s, qy + reach, 1);
  const int z0 = grid_coordinate(s, qz - reach, 2), z1 = grid_coordinate(s, qz + reach, 2);
  float my_key = __int_as_float(0x7f800000), my_d2 = my_key;  // this lane's slot
  std::int32_t my_idx = 0x7fffffff;
  long long found = 0;
  for (int z = z0; z <= z1; ++z)
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) {
        const long long c = grid_cell(s, x, y, z);
        const std::int32_t first = begin[c], end = begin[c + 1];
        for (std::int32_t base = first; base < end; base += 32) {
          const std::int32_t p = base + lane;
          float d2 = 0.f;
          bool hit = false;
          if (p < end) {
            const float4 v = sorted[p];
            d2 = squared_distance(v.x, v.y, v.z, qx, qy, qz);
            hit = d2 < spec.radius2 && (spec.min_radius2 == 0.f || d2 == 0.f || d2 >= spec.min_radius2);
          }
          unsigned hits = __ballot_sync(0xffffffffu, hit);
          found += __popc(hits);
          const std::int32_t idx = hit ? index[p] : 0;
          while (hits) {  // in lane order; each hit goes into the spread row
            const int from = __ffs(hits) - 1;
            hits &= hits - 1;
            const std::int32_t ci = __shfl_sync(0xffffffffu, idx, from);
            const float cd2 = __shfl_sync(0xffffffffu, d2, from);
            const float ck = spec.by_index ? 0.f : cd2;
            const bool goes_before = lane < spec.k && neighbor_before(ck, ci, my_key, my_idx);
            const unsigned before_mask = __ballot_sync(0xffffffffu, goes_before);
            if (!before_mask) continue;  // not among the best K
            const int at = __ffs(before_mask) - 1;
            const float up_key = __shfl_up_sync(0xffffffffu, my_key, 1), up_d2 = __shfl_up_sync(0xffffffffu, my_d2, 1);
            const std::int32_t up_idx = __shfl_up_sync(0xffffffffu, my_idx, 1);
            if (lane == at)
              my_key = ck, my_d2 = cd2, my_idx = ci;
            else if (lane > at)
              my_key = up_key, my_d2 = up_d2, my_idx = up_idx;
          }
        }
      }
  const int count = found < spec.k ? static_cast<int>(found) : spec.k;
  const std::int32_t first_idx = __shfl_sync(0xffffffffu, my_idx, 0);
  const float first_d2 = __shfl_sync(0xffffffffu, my_d2, 0);
  if (lane < spec.k) {
    std::int32_t i = -1;
    float d = __int_as_float(0x7f800000);
    if (lane < count)
      i = my_idx, d = sqrtf(my_d2);
    else if (spec.pad_first && count > 0)
      i = first_idx, d = sqrtf(first_d2);
    if (out_index) out_index[q * spec.k + lane] = i;
    if (out_distance) out_distance[q * spec.k + lane] = d;
  }
  if (out_count && lane == 0) out_count[q] = count;
}

class CudaNeighbors final : public NeighborEngine::Impl {
 public:
  explicit CudaNeighbors(const Device& device) : Impl(device) {
    s3d::detail::require_kernel_image(reinterpret_cast<const void*>(&search_kernel<16>));
  }

  ~CudaNeighbors() override {
    try {
      work_done_.synchronize();  // buffers are released on stream_, after the last kernel that used them
    } catch (...) {
    }
  }

  void run_host(const SearchRequest& request) override {
    ScopedDevice on(device_.index());
    const std::size_t n = request.points.size, nq = request.queries.size;
    const std::int64_t queries = request.query_count();
    const std::size_t slots = static_cast<std::size_t>(queries) * request.spec.k;
    uploaded_points_.resize(3 * n);
    uploaded_points_.copy_from_host_async(request.points.xyz, 3 * n, stream_);
    if (nq)
      uploaded_queries_.resize(3 * nq, stream_),
          uploaded_queries_.copy_from_host_async(request.queries.xyz, 3 * nq, stream_);
    out_index_.resize(slots, stream_);
    out_distance_.resize(slots, stream_);
    out_count_.resize(static_cast<std::size_t>(queries), stream_);
    SearchRequest on_device = request;
    on_device.points.xyz = uploaded_points_.data();
    on_device.queries.xyz = nq ? uploaded_queries_.data() : nullptr;
    on_device.indices = out_index_.data();
    on_device.distances = out_distance_.data();
    on_device.counts = out_count_.data();
    run_device_async(on_device, stream_);
    if (request.indices) out_index_.copy_to_host_async(request.indices, slots, stream_);
    if (request.distances) out_distance_.copy_to_host_async(request.distances, slots, stream_);
    if (request.counts) out_count_.copy_to_host_async(request.counts, static_cast<std::size_t>(queries), stream_);
    stream_.synchronize();
  }

  void run_device_async(const SearchRequest& request, StreamHandle stream) override {
    ScopedDevice on(device_.index());
    const long long n = static_cast<long long>(request.points.size);
    const long long queries = request.query_count();
    const long long max_cells = max_grid_cells(n);
    int key_bits = 1;
    while ((1LL << key_bits) <= max_cells) ++key_bits;

    // Scratch on the engine's stream (released there), the caller's stream ordered after the allocations.
    bounds_.resize(6, stream_);
    shape_.resize(1, stream_);
    keys_.resize(static_cast<std::size_t>(2 * n), stream_);
    index_.resize(static_cast<std::size_t>(2 * n), stream_);
    begin_.resize(static_cast<std::size_t>(max_cells) + 1, stream_);
    sorted_.resize(static_cast<std::size_t>(n), stream_);
    std::size_t sort_bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_.data(), keys_.data() + n, index_.data(),
                                                   index_.data() + n, static_cast<int>(n), 0, key_bits, stream));
    sort_scratch_.resize(std::max<std::size_t>(sort_bytes, 1), stream_);
    const int k = request.spec.k;
    const int km = k <= 4 ? 4 : k <= 8 ? 8 : k <= 16 ? 16 : k <= 32 ? 32 : 0;
    if (km == 0) row_scratch_.resize(static_cast<std::size_t>(3 * queries * k), stream_);
    allocated_.record(stream_);
    allocated_.wait(stream);

    const float* xyz = request.points.xyz;
    init_bounds_kernel<<<1, 32, 0, stream>>>(bounds_.data());
    S3D_CUDA_CHECK_LAUNCH();
    const unsigned bound_blocks = std::min<unsigned>(blocks_for(n), 1024);
    bounds_kernel<<<bound_blocks, kThreads, 0, stream>>>(xyz, n, bounds_.data());
    S3D_CUDA_CHECK_LAUNCH();
    shape_kernel<<<1, 1, 0, stream>>>(bounds_.data(), n, request.points_per_cell, request.min_cell, max_cells,
                                      shape_.data());
    S3D_CUDA_CHECK_LAUNCH();
    cell_keys_kernel<<<blocks_for(n), kThreads, 0, stream>>>(xyz, n, shape_.data(), keys_.data(), index_.data());
    S3D_CUDA_CHECK_LAUNCH();
    S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch_.data(), sort_bytes, keys_.data(), keys_.data() + n,
                                                   index_.data(), index_.data() + n, static_cast<int>(n), 0, key_bits,
                                                   stream));
    const unsigned* sorted_keys = keys_.data() + n;
    const std::int32_t* sorted_index = index_.data() + n;
    cell_ranges_kernel<<<blocks_for(n + 1), kThreads, 0, stream>>>(sorted_keys, n, shape_.data(), begin_.data());
    S3D_CUDA_CHECK_LAUNCH();
    gather_kernel<<<blocks_for(n), kThreads, 0, stream>>>(xyz, n, sorted_index, sorted_.data());
    S3D_CUDA_CHECK_LAUNCH();

    const float* queries_xyz = request.queries.size ? request.queries.xyz : nullptr;
    if (request.spec.ball && k <= 32) {
      const float* ball_queries = queries_xyz ? queries_xyz : xyz;  // self-queries in input order
      const unsigned warps_per_block = kThreads / 32;
      const unsigned ball_blocks = static_cast<unsigned>((queries + warps_per_block - 1) / warps_per_block);
      ball_warp_kernel<<<std::max(1u, ball_blocks), kThreads, 0, stream>>>(
          shape_.data(), begin_.data(), sorted_.data(), sorted_index, ball_queries, queries, request.spec,
          request.indices, request.distances, request.counts);
      S3D_CUDA_CHECK_LAUNCH();
      work_done_.record(stream);
      return;
    }
    float* scratch = km == 0 ? row_scratch_.data() : nullptr;
    // Few queries (a ball query over 4,096 of them, say) spread over more SMs in small blocks.
    const int threads = queries < 65536 ? 64 : kThreads;
    const unsigned blocks = static_cast<unsigned>(std::max<long long>(1, (queries + threads - 1) / threads));
    const auto launch = [&](auto kernel) {
      kernel<<<blocks, threads, 0, stream>>>(shape_.data(), begin_.data(), sorted_.data(), sorted_index, queries_xyz,
                                             queries, request.spec, scratch, request.indices, request.distances,
                                             request.counts);
    };
    switch (km) {
      case 4:
        launch(search_kernel<4>);
        break;
      case 8:
        launch(search_kernel<8>);
        break;
      case 16:
        launch(search_kernel<16>);
        break;
      case 32:
        launch(search_kernel<32>);
        break;
      default:
        launch(search_kernel<0>);
        break;
    }
    S3D_CUDA_CHECK_LAUNCH();
    work_done_.record(stream);
  }

 private:
  Stream stream_;
  Event allocated_, work_done_;
  DeviceBuffer<int> bounds_;
  DeviceBuffer<GridShape> shape_;
  DeviceBuffer<unsigned> keys_;
  DeviceBuffer<std::int32_t> index_, begin_;
  DeviceBuffer<float4> sorted_;
  DeviceBuffer<unsigned char> sort_scratch_;
  DeviceBuffer<float> row_scratch_;
  DeviceBuffer<float> uploaded_points_, uploaded_queries_;
  DeviceBuffer<std::int32_t> out_index_, out_count_;
  DeviceBuffer<float> out_distance_;
};

}  // namespace

std::unique_ptr<NeighborEngine::Impl> make_cuda_neighbors(const Device& device) {
  return std::make_unique<CudaNeighbors>(device);
}

}  // namespace s3d::points::detail
