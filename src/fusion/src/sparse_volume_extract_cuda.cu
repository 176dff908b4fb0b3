// The sparse volume's mesh and cloud on CUDA: the blocks sorted by key (CUB radix sort), one CUDA block per
// volume block (its 27-block neighbourhood in shared memory, one thread per voxel) for the per-voxel passes,
// CUB exclusive scans of the counts (integer sums: deterministic), then per-voxel writes at the scanned
// offsets. Same functions and order as the CPU backend (sparse_volume_extract.hpp), so the same output bit for
// bit, whatever slots the blocks sit in.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "marching_cubes_tables.hpp"
#include "s3d/core/cuda_check.cuh"
#include "sparse_volume_cuda.cuh"
#include "sparse_volume_extract.hpp"
#include "volume_common.hpp"

namespace s3d::fusion::detail {
namespace {

__constant__ std::int8_t c_sparse_mc_triangles[256][16];
__constant__ std::uint8_t c_sparse_mc_count[256];

__global__ void iota_kernel(int* out, long long n) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<int>(i);
}

__global__ void order_kernel(const int* sorted_slots, long long n, int* order) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) order[sorted_slots[i]] = static_cast<int>(i);
}

/// Loads sorted block blockIdx.x's neighbourhood into `nb` (shared); every thread then reads it.
__device__ __forceinline__ void load_neighbourhood(const SparseDeviceVolume& v, const unsigned long long* sorted_keys,
                                                   BlockNeighbourhood& nb) {
  const BlockCoord b = unpack_block(sorted_keys[blockIdx.x]);
  if (threadIdx.x < 27) nb.load_one(v.hash, b, static_cast<int>(threadIdx.x));
  if (threadIdx.x == 0) nb.block = b;
  __syncthreads();
}

__global__ void mesh_masks_kernel(SparseDeviceVolume v, const unsigned long long* sorted_keys, std::uint8_t* masks,
                                  std::uint8_t* cases) {
  __shared__ BlockNeighbourhood nb;
  load_neighbourhood(v, sorted_keys, nb);
  const int l = static_cast<int>(threadIdx.x);
  const LocalVoxel p = local_voxel(l);
  const long long i = static_cast<long long>(blockIdx.x) * kBlockVoxels + l;
  masks[i] = static_cast<std::uint8_t>(sparse_edge_mask(nb, v.voxels, p.x, p.y, p.z));
  cases[i] = static_cast<std::uint8_t>(sparse_cube_case(nb, v.voxels, p.x, p.y, p.z));
}

__global__ void cloud_masks_kernel(SparseDeviceVolume v, const unsigned long long* sorted_keys, std::uint8_t* masks) {
  __shared__ BlockNeighbourhood nb;
  load_neighbourhood(v, sorted_keys, nb);
  const int l = static_cast<int>(threadIdx.x);
  const LocalVoxel p = local_voxel(l);
  masks[static_cast<long long>(blockIdx.x) * kBlockVoxels + l] =
      static_cast<std::uint8_t>(sparse_cloud_mask(nb, v.voxels, p.x, p.y, p.z));
}

/// The vertices (and, with `cases`, the triangles) of sorted block blockIdx.x's voxels at their offsets.
__global__ void write_kernel(SparseDeviceVolume v, const unsigned long long* sorted_keys, const int* order,
                             const std::uint8_t* masks, const std::int64_t* vertex_offset, const std::uint8_t* cases,
                             const std::int64_t* triangle_offset, float* positions, float* normals, std::uint8_t* rgb,
                             std::int32_t* triangles) {
  __shared__ BlockNeighbourhood nb;
  load_neighbourhood(v, sorted_keys, nb);
  const int l = static_cast<int>(threadIdx.x);
  const LocalVoxel p = local_voxel(l);
  const long long i = static_cast<long long>(blockIdx.x) * kBlockVoxels + l;
  if (masks[i] != 0)
    sparse_write_vertices(nb, v.voxels, v.colors, v.grid, p.x, p.y, p.z, masks[i], vertex_offset[i], positions, normals,
                          rgb);
  if (cases == nullptr) return;
  const int cube = cases[i];
  const int count = c_sparse_mc_count[cube];
  if (count != 0)
    sparse_emit_triangles(&c_sparse_mc_triangles[cube][0], count, nb, order, masks, vertex_offset, p.x, p.y, p.z,
                          triangles + 3LL * triangle_offset[i]);
}

/// Per-voxel counts for the scans; item n (one past the end) counts 0, so offset[n] is the total.
struct MaskCount {
  const std::uint8_t* masks;
  long long n;
  __host__ __device__ std::int64_t operator()(long long i) const {
#ifdef __CUDA_ARCH__
    return i < n ? mask_count(masks[i]) : 0;
#else
    return 0;
#endif
  }
};
struct TriangleCount {
  const std::uint8_t* cases;
  long long n;
  __host__ __device__ std::int64_t operator()(long long i) const {
#ifdef __CUDA_ARCH__
    return i < n ? static_cast<std::int64_t>(c_sparse_mc_count[cases[i]]) : 0;
#else
    return 0;
#endif
  }
};

unsigned int grid_1d(long long n) { return static_cast<unsigned int>((n + 255) / 256); }

/// Exclusive sum (64-bit) of the counts of items [0, n] into `out` (n + 1 entries); returns the total.
/// Synchronizes.
template <typename Count>
long long scan_counts(Count count, long long n, DeviceBuffer<std::int64_t>& out, cudaStream_t st) {
  out.resize(static_cast<std::size_t>(n + 1), st);
  const auto in = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), count);
  std::size_t bytes = 0;
  S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out.data(), n + 1, st));
  DeviceBuffer<unsigned char> temp(bytes > 0 ? bytes : 1, st);
  S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, in, out.data(), n + 1, st));
  std::int64_t total = 0;
  S3D_CUDA_CHECK(cudaMemcpyAsync(&total, out.data() + n, sizeof total, cudaMemcpyDeviceToHost, st));
  S3D_CUDA_CHECK(cudaStreamSynchronize(st));
  return total;
}

/// Device to host into a std::vector of `count` elements.
template <typename T>
void fetch(const DeviceBuffer<T>& d, std::vector<T>& h, long long count, cudaStream_t st) {
  h.resize(static_cast<std::size_t>(count));
  if (count > 0) d.copy_to_host_async(h.data(), h.size(), st);
}

}  // namespace

void upload_sparse_mc_tables(cudaStream_t stream) {
  S3D_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_sparse_mc_triangles, kMcTriangles, sizeof(kMcTriangles), 0,
                                         cudaMemcpyHostToDevice, stream));
  S3D_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_sparse_mc_count, kMcTriangleCount, sizeof(kMcTriangleCount), 0,
                                         cudaMemcpyHostToDevice, stream));
}

void sort_blocks_cuda(const SparseDeviceVolume& v, DeviceBuffer<unsigned long long>& keys, DeviceBuffer<int>& slots,
                      cudaStream_t st) {
  const long long n = v.blocks;
  keys.resize(static_cast<std::size_t>(n > 0 ? n : 1), st);
  slots.resize(keys.size(), st);
  if (n == 0) return;
  DeviceBuffer<int> iota(static_cast<std::size_t>(n), st);
  iota_kernel<<<grid_1d(n), 256, 0, st>>>(iota.data(), n);
  S3D_CUDA_CHECK_LAUNCH();
  std::size_t bytes = 0;
  S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, v.block_keys, keys.data(), iota.data(), slots.data(),
                                                 static_cast<int>(n), 0, 64, st));
  DeviceBuffer<unsigned char> temp(bytes > 0 ? bytes : 1, st);
  S3D_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, v.block_keys, keys.data(), iota.data(),
                                                 slots.data(), static_cast<int>(n), 0, 64, st));
  S3D_CUDA_CHECK(cudaStreamSynchronize(st));
}

Mesh sparse_mesh_cuda(const SparseDeviceVolume& v, cudaStream_t st) {
  Mesh mesh;
  const long long blocks = v.blocks, n = blocks * kBlockVoxels;
  if (blocks == 0) return mesh;
  DeviceBuffer<unsigned long long> keys;
  DeviceBuffer<int> slots;
  sort_blocks_cuda(v, keys, slots, st);
  DeviceBuffer<int> order(static_cast<std::size_t>(blocks), st);
  order_kernel<<<grid_1d(blocks), 256, 0, st>>>(slots.data(), blocks, order.data());
  S3D_CUDA_CHECK_LAUNCH();
  DeviceBuffer<std::uint8_t> masks(static_cast<std::size_t>(n), st), cases(static_cast<std::size_t>(n), st);
  mesh_masks_kernel<<<static_cast<unsigned int>(blocks), kBlockVoxels, 0, st>>>(v, keys.data(), masks.data(),
                                                                                cases.data());
  S3D_CUDA_CHECK_LAUNCH();
  DeviceBuffer<std::int64_t> vertex_offset, triangle_offset;
  const long long vertices = scan_counts(MaskCount{masks.data(), n}, n, vertex_offset, st);
  const long long triangles = scan_counts(TriangleCount{cases.data(), n}, n, triangle_offset, st);
  check_mesh_size(vertices, triangles);
  const bool color = v.colors != nullptr;
  DeviceBuffer<float> positions(static_cast<std::size_t>(3 * vertices + 1), st), normals(positions.size(), st);
  DeviceBuffer<std::uint8_t> rgb(color ? positions.size() : 1, st);
  DeviceBuffer<std::int32_t> ids(static_cast<std::size_t>(3 * triangles + 1), st);
  write_kernel<<<static_cast<unsigned int>(blocks), kBlockVoxels, 0, st>>>(
      v, keys.data(), order.data(), masks.data(), vertex_offset.data(), cases.data(), triangle_offset.data(),
      positions.data(), normals.data(), color ? rgb.data() : nullptr, ids.data());
  S3D_CUDA_CHECK_LAUNCH();
  fetch(positions, mesh.vertices, 3 * vertices, st);
  fetch(normals, mesh.normals, 3 * vertices, st);
  if (color) fetch(rgb, mesh.colors, 3 * vertices, st);
  fetch(ids, mesh.triangles, 3 * triangles, st);
  S3D_CUDA_CHECK(cudaStreamSynchronize(st));
  return mesh;
}

SurfaceCloud sparse_cloud_cuda(const SparseDeviceVolume& v, cudaStream_t st) {
  SurfaceCloud cloud;
  const long long blocks = v.blocks, n = blocks * kBlockVoxels;
  if (blocks == 0) return cloud;
  DeviceBuffer<unsigned long long> keys;
  DeviceBuffer<int> slots;
  sort_blocks_cuda(v, keys, slots, st);
  DeviceBuffer<std::uint8_t> masks(static_cast<std::size_t>(n), st);
  cloud_masks_kernel<<<static_cast<unsigned int>(blocks), kBlockVoxels, 0, st>>>(v, keys.data(), masks.data());
  S3D_CUDA_CHECK_LAUNCH();
  DeviceBuffer<std::int64_t> offset;
  const long long points = scan_counts(MaskCount{masks.data(), n}, n, offset, st);
  check_mesh_size(points, 0);
  const bool color = v.colors != nullptr;
  DeviceBuffer<float> positions(static_cast<std::size_t>(3 * points + 1), st), normals(positions.size(), st);
  DeviceBuffer<std::uint8_t> rgb(color ? positions.size() : 1, st);
  write_kernel<<<static_cast<unsigned int>(blocks), kBlockVoxels, 0, st>>>(
      v, keys.data(), nullptr, masks.data(), offset.data(), nullptr, nullptr, positions.data(), normals.data(),
      color ? rgb.data() : nullptr, nullptr);
  S3D_CUDA_CHECK_LAUNCH();
  fetch(positions, cloud.points, 3 * points, st);
  fetch(normals, cloud.normals, 3 * points, st);
  if (color) fetch(rgb, cloud.colors, 3 * points, st);
  S3D_CUDA_CHECK(cudaStreamSynchronize(st));
  return cloud;
}

}  // namespace s3d::fusion::detail
