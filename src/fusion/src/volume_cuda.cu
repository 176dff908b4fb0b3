// The TSDF volume, CUDA backend. The per-voxel and per-pixel math is tsdf_math.hpp's, shared with the CPU
// oracle, so voxels, maps, meshes and clouds are bit-identical to it.
// - integrate: one thread per (x, y) column marching z (KinFu tsdf23); the warp covers consecutive x, so every
//   voxel access is coalesced; a voxel is read and written only when it is updated (its colour likewise).
// - raycast: one thread per pixel.
// - extract_mesh / extract_cloud: per-voxel passes (cube cases, owned-edge masks), CUB exclusive scans of the
//   per-voxel counts (deterministic: integer sums), then per-voxel writes at the scanned offsets. Vertex and
//   triangle order is therefore by voxel / cube linear index, then axis / table order, as on the CPU.
// Every method synchronizes the backend's stream before returning; inputs (depth, maps) must be complete on
// entry. Scratch for the extraction is allocated per call (extraction is a once-per-sequence operation).
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cstring>
#include <cub/cub.cuh>
#include <vector>

#include "backend.hpp"
#include "marching_cubes_tables.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"
#include "tsdf_math.hpp"
#include "volume_common.hpp"

namespace s3d::fusion::detail {
namespace {

__constant__ std::int8_t c_mc_triangles[256][16];
__constant__ std::uint8_t c_mc_triangle_count[256];

constexpr int kBlockX = 32;
constexpr int kBlockY = 8;
constexpr int kVoxelBlock = 256;

__global__ void clear_kernel(Voxel* vol, ColorVoxel* colors, long long n) {
  const long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= n) return;
  vol[v] = Voxel{0, 0};
  if (colors) colors[v] = ColorVoxel{0, 0, 0, 0};
}

/// `colors` and `rgb` are both set (a volume with colour, a frame with a colour image) or both null.
__global__ void integrate_kernel(Voxel* vol, ColorVoxel* colors, IntegrateArgs a, const float* depth, long long pitch,
                                 const std::uint8_t* rgb) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= a.grid.nx || j >= a.grid.ny) return;
  int k0, k1;
  if (!column_range(a, i, j, k0, k1)) return;
  for (int k = k0; k <= k1; ++k) {
    float tsdf;
    long long pixel;
    if (!tsdf_sample(a, depth, pitch, i, j, k, tsdf, pixel)) continue;
    const long long index = a.grid.index(i, j, k);
    vol[index] = tsdf_fuse(vol[index], tsdf, a.grid.max_weight);
    if (colors && takes_color(tsdf)) colors[index] = color_fuse(colors[index], rgb + 3 * pixel, a.grid.max_weight);
  }
}

__global__ void raycast_kernel(const Voxel* vol, RaycastArgs a, Vec3f* vertices, Vec3f* normals) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= a.width || y >= a.height) return;
  Vec3f v, n;
  raycast_pixel(vol, a, x, y, v, n);
  const long long p = static_cast<long long>(y) * a.width + x;
  vertices[p] = v;
  normals[p] = n;
}

/// (i, j, k) of a thread of a 1-D launch over all voxels (linear index, x fastest).
struct VoxelThread {
  int i, j, k;
  bool valid;
};
__device__ __forceinline__ VoxelThread voxel_thread(const VolumeGrid& g) {
  VoxelThread t;
  const long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  t.valid = v < g.count();
  const long long plane = static_cast<long long>(g.nx) * g.ny;
  t.k = static_cast<int>(v / plane);
  const long long r = v - static_cast<long long>(t.k) * plane;
  t.j = static_cast<int>(r / g.nx);
  t.i = static_cast<int>(r - static_cast<long long>(t.j) * g.nx);
  return t;
}

__global__ void cube_case_kernel(const Voxel* vol, VolumeGrid g, std::uint8_t* cases) {
  const VoxelThread t = voxel_thread(g);
  if (!t.valid) return;
  int c = 0;
  if (t.i + 1 < g.nx && t.j + 1 < g.ny && t.k + 1 < g.nz) c = cube_case(vol, g, t.i, t.j, t.k);
  cases[g.index(t.i, t.j, t.k)] = static_cast<std::uint8_t>(c);
}

__global__ void edge_mask_kernel(const Voxel* vol, const std::uint8_t* cases, VolumeGrid g, std::uint8_t* masks) {
  const VoxelThread t = voxel_thread(g);
  if (!t.valid) return;
  masks[g.index(t.i, t.j, t.k)] = static_cast<std::uint8_t>(edge_mask(vol, cases, g, t.i, t.j, t.k));
}

__global__ void cloud_mask_kernel(const Voxel* vol, VolumeGrid g, std::uint8_t* masks) {
  const VoxelThread t = voxel_thread(g);
  if (!t.valid) return;
  masks[g.index(t.i, t.j, t.k)] = static_cast<std::uint8_t>(cloud_mask(vol, g, t.i, t.j, t.k));
}

__global__ void edge_vertex_kernel(const Voxel* vol, const ColorVoxel* colors, VolumeGrid g, const std::uint8_t* masks,
                                   const std::int32_t* offset, float* positions, float* normals, std::uint8_t* rgb) {
  const VoxelThread t = voxel_thread(g);
  if (!t.valid) return;
  const long long v = g.index(t.i, t.j, t.k);
  const int mask = masks[v];
  if (mask == 0) return;
  long long out = offset[v];
  for (int axis = 0; axis < 3; ++axis) {
    if (!(mask & (1 << axis))) continue;
    Vec3f p, n;
    edge_vertex(vol, g, t.i, t.j, t.k, axis, p, n);
    store3(positions, out, p);
    store3(normals, out, n);
    if (colors) edge_color(vol, colors, g, t.i, t.j, t.k, axis, rgb + 3 * out);
    ++out;
  }
}

__global__ void triangle_kernel(VolumeGrid g, const std::uint8_t* cases, const std::uint8_t* masks,
                                const std::int32_t* vertex_offset, const std::int32_t* triangle_offset,
                                std::int32_t* triangles) {
  const VoxelThread t = voxel_thread(g);
  if (!t.valid) return;
  const long long c = g.index(t.i, t.j, t.k);
  const int cube = cases[c];
  const int count = c_mc_triangle_count[cube];
  if (count == 0) return;
  emit_cube_triangles(&c_mc_triangles[cube][0], count, g, t.i, t.j, t.k, masks, vertex_offset,
                      triangles + 3LL * triangle_offset[c]);
}

/// Per-item counts for the scans; item n (one past the end) counts 0, so offset[n] is the total.
struct MaskCount {
  const std::uint8_t* masks;
  long long n;
  __host__ __device__ std::int32_t operator()(long long v) const {
#ifdef __CUDA_ARCH__
    return v < n ? mask_count(masks[v]) : 0;
#else
    return 0;
#endif
  }
};
struct TriangleCount {
  const std::uint8_t* cases;
  long long n;
  __host__ __device__ std::int32_t operator()(long long v) const {
#ifdef __CUDA_ARCH__
    return v < n ? static_cast<std::int32_t>(c_mc_triangle_count[cases[v]]) : 0;
#else
    return 0;
#endif
  }
};

Stream make_stream(int device) {
  ScopedDevice scope(device);
  return Stream();
}

class CudaVolume final : public VolumeBackend {
 public:
  CudaVolume(const Device& device, const VolumeParams& params)
      : device_(device), grid_(make_grid(params)), stream_(make_stream(device.index())) {
    ScopedDevice scope(device_.index());
    S3D_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_mc_triangles, kMcTriangles, sizeof(kMcTriangles), 0,
                                           cudaMemcpyHostToDevice, stream_.get()));
    S3D_CUDA_CHECK(cudaMemcpyToSymbolAsync(c_mc_triangle_count, kMcTriangleCount, sizeof(kMcTriangleCount), 0,
                                           cudaMemcpyHostToDevice, stream_.get()));
    voxels_.resize(static_cast<std::size_t>(grid_.count()), stream_.get());
    if (params.color) colors_.resize(voxels_.size(), stream_.get());
    clear();
    stream_.synchronize();
  }

  void reset() override {
    ScopedDevice scope(device_.index());
    clear();
    stream_.synchronize();
  }

  void integrate(ImageView<const float> depth_m, const std::uint8_t* rgb, const CameraIntrinsics& camera,
                 const Rigid& camera_to_world) override {
    if (depth_m.empty()) return;
    ScopedDevice scope(device_.index());
    const IntegrateArgs a = make_integrate_args(grid_, depth_m, camera, camera_to_world);
    const bool color = rgb != nullptr && colors_.size() > 0;
    if (color) {
      // Through pinned memory: the caller's image may go away once this returns, and a pageable copy would
      // wait for the stream anyway.
      const std::size_t bytes = 3 * static_cast<std::size_t>(depth_m.width) * depth_m.height;
      rgb_staging_.resize(bytes);
      std::memcpy(rgb_staging_.data(), rgb, bytes);
      rgb_.resize(bytes, stream_.get());
      rgb_.copy_from_host_async(rgb_staging_.data(), bytes, stream_.get());
    }
    const dim3 block(kBlockX, kBlockY);
    const dim3 grid(detail_grid(grid_.nx, kBlockX), detail_grid(grid_.ny, kBlockY));
    integrate_kernel<<<grid, block, 0, stream_.get()>>>(voxels_.data(), color ? colors_.data() : nullptr, a,
                                                        depth_m.data, static_cast<long long>(depth_m.pitch),
                                                        color ? rgb_.data() : nullptr);
    S3D_CUDA_CHECK_LAUNCH();
    stream_.synchronize();
  }

  void raycast(const CameraIntrinsics& camera, const Rigid& camera_to_world, Maps out) override {
    if (out.width <= 0 || out.height <= 0) return;
    ScopedDevice scope(device_.index());
    const RaycastArgs a = make_raycast_args(grid_, camera, camera_to_world, out.width, out.height);
    const dim3 block(kBlockX, kBlockY);
    const dim3 grid(detail_grid(out.width, kBlockX), detail_grid(out.height, kBlockY));
    raycast_kernel<<<grid, block, 0, stream_.get()>>>(voxels_.data(), a, out.vertices, out.normals);
    S3D_CUDA_CHECK_LAUNCH();
    stream_.synchronize();
  }

  Mesh extract_mesh() override {
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    const long long n = grid_.count();
    DeviceBuffer<std::uint8_t> cases(static_cast<std::size_t>(n), st), masks(static_cast<std::size_t>(n), st);
    DeviceBuffer<std::int32_t> vertex_offset(static_cast<std::size_t>(n + 1), st);
    DeviceBuffer<std::int32_t> triangle_offset(static_cast<std::size_t>(n + 1), st);
    const dim3 block(kVoxelBlock), grid = voxel_launch_grid();
    cube_case_kernel<<<grid, block, 0, st>>>(voxels_.data(), grid_, cases.data());
    S3D_CUDA_CHECK_LAUNCH();
    edge_mask_kernel<<<grid, block, 0, st>>>(voxels_.data(), cases.data(), grid_, masks.data());
    S3D_CUDA_CHECK_LAUNCH();
    const long long vertices = exclusive_scan(
        thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), MaskCount{masks.data(), n}),
        vertex_offset.data(), n + 1);
    const long long triangles = exclusive_scan(
        thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), TriangleCount{cases.data(), n}),
        triangle_offset.data(), n + 1);
    Mesh mesh;
    DeviceBuffer<float> positions(static_cast<std::size_t>(3 * vertices), st);
    DeviceBuffer<float> normals(static_cast<std::size_t>(3 * vertices), st);
    DeviceBuffer<std::int32_t> ids(static_cast<std::size_t>(3 * triangles), st);
    DeviceBuffer<std::uint8_t> rgb(colors_.size() > 0 ? static_cast<std::size_t>(3 * vertices) : 0, st);
    if (vertices > 0) {
      edge_vertex_kernel<<<grid, block, 0, st>>>(voxels_.data(), colors_.size() > 0 ? colors_.data() : nullptr, grid_,
                                                 masks.data(), vertex_offset.data(), positions.data(), normals.data(),
                                                 rgb.data());
      S3D_CUDA_CHECK_LAUNCH();
    }
    if (triangles > 0) {
      triangle_kernel<<<grid, block, 0, st>>>(grid_, cases.data(), masks.data(), vertex_offset.data(),
                                              triangle_offset.data(), ids.data());
      S3D_CUDA_CHECK_LAUNCH();
    }
    mesh.vertices.resize(static_cast<std::size_t>(3 * vertices));
    mesh.normals.resize(static_cast<std::size_t>(3 * vertices));
    mesh.triangles.resize(static_cast<std::size_t>(3 * triangles));
    positions.copy_to_host_async(mesh.vertices.data(), mesh.vertices.size(), st);
    normals.copy_to_host_async(mesh.normals.data(), mesh.normals.size(), st);
    ids.copy_to_host_async(mesh.triangles.data(), mesh.triangles.size(), st);
    mesh.colors.resize(rgb.size());
    rgb.copy_to_host_async(mesh.colors.data(), mesh.colors.size(), st);
    stream_.synchronize();
    return mesh;
  }

  SurfaceCloud extract_cloud() override {
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    const long long n = grid_.count();
    DeviceBuffer<std::uint8_t> masks(static_cast<std::size_t>(n), st);
    DeviceBuffer<std::int32_t> offset(static_cast<std::size_t>(n + 1), st);
    const dim3 block(kVoxelBlock), grid = voxel_launch_grid();
    cloud_mask_kernel<<<grid, block, 0, st>>>(voxels_.data(), grid_, masks.data());
    S3D_CUDA_CHECK_LAUNCH();
    const long long points = exclusive_scan(
        thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), MaskCount{masks.data(), n}),
        offset.data(), n + 1);
    SurfaceCloud cloud;
    DeviceBuffer<float> positions(static_cast<std::size_t>(3 * points), st);
    DeviceBuffer<float> normals(static_cast<std::size_t>(3 * points), st);
    DeviceBuffer<std::uint8_t> rgb(colors_.size() > 0 ? static_cast<std::size_t>(3 * points) : 0, st);
    if (points > 0) {
      edge_vertex_kernel<<<grid, block, 0, st>>>(voxels_.data(), colors_.size() > 0 ? colors_.data() : nullptr, grid_,
                                                 masks.data(), offset.data(), positions.data(), normals.data(),
                                                 rgb.data());
      S3D_CUDA_CHECK_LAUNCH();
    }
    cloud.points.resize(static_cast<std::size_t>(3 * points));
    cloud.normals.resize(static_cast<std::size_t>(3 * points));
    positions.copy_to_host_async(cloud.points.data(), cloud.points.size(), st);
    normals.copy_to_host_async(cloud.normals.data(), cloud.normals.size(), st);
    cloud.colors.resize(rgb.size());
    rgb.copy_to_host_async(cloud.colors.data(), cloud.colors.size(), st);
    stream_.synchronize();
    return cloud;
  }

  void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) override {
    ScopedDevice scope(device_.index());
    std::vector<Voxel> host(voxels_.size());
    voxels_.copy_to_host_async(host.data(), host.size(), stream_.get());
    stream_.synchronize();
    tsdf.resize(host.size());
    weight.resize(host.size());
    for (std::size_t v = 0; v < host.size(); ++v) {
      tsdf[v] = host[v].tsdf;
      weight[v] = host[v].weight;
    }
  }

  void download_colors(std::vector<std::uint8_t>& rgbw) override {
    ScopedDevice scope(device_.index());
    std::vector<ColorVoxel> host(colors_.size());
    colors_.copy_to_host_async(host.data(), host.size(), stream_.get());
    stream_.synchronize();
    rgbw.resize(4 * host.size());
    if (!host.empty()) std::memcpy(rgbw.data(), host.data(), rgbw.size());
  }

 private:
  static unsigned int detail_grid(long long n, int block) { return static_cast<unsigned int>((n + block - 1) / block); }

  dim3 voxel_launch_grid() const { return dim3(detail_grid(grid_.count(), kVoxelBlock)); }

  void clear() {
    const long long n = grid_.count();
    clear_kernel<<<static_cast<unsigned int>((n + 255) / 256), 256, 0, stream_.get()>>>(
        voxels_.data(), colors_.size() > 0 ? colors_.data() : nullptr, n);
    S3D_CUDA_CHECK_LAUNCH();
  }

  /// Exclusive sum of `items` counts into `out`; returns out[items - 1] (the total when the last count is 0).
  /// Synchronizes the stream.
  template <typename Iterator>
  long long exclusive_scan(Iterator in, std::int32_t* out, long long items) {
    cudaStream_t st = stream_.get();
    std::size_t bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items, st));
    scratch_.resize(bytes > 0 ? bytes : 1, st);
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch_.data(), bytes, in, out, items, st));
    S3D_CUDA_CHECK_LAUNCH();
    std::int32_t total = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(&total, out + (items - 1), sizeof total, cudaMemcpyDeviceToHost, st));
    stream_.synchronize();
    return total;
  }

  Device device_;
  VolumeGrid grid_;
  Stream stream_;
  DeviceBuffer<Voxel> voxels_;
  DeviceBuffer<ColorVoxel> colors_;  // empty without colour
  DeviceBuffer<std::uint8_t> rgb_;   // the frame's colour image
  PinnedBuffer<std::uint8_t> rgb_staging_;
  DeviceBuffer<unsigned char> scratch_;
};

}  // namespace

std::unique_ptr<VolumeBackend> make_cuda_volume(const Device& device, const VolumeParams& params) {
  validate_volume(params);
  return std::make_unique<CudaVolume>(device, params);
}

}  // namespace s3d::fusion::detail
