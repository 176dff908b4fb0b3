// The TSDF volume, CUDA backend. The per-voxel and per-pixel math is tsdf_math.hpp's, shared with the CPU
// oracle, so voxels, maps, meshes and clouds are bit-identical to it.
// - integrate: one thread per (x, y) column marching z (KinFu tsdf23); the warp covers consecutive x, so every
//   voxel access is coalesced; a voxel is read and written only when it is updated (its colour likewise).
// - raycast: one thread per pixel.
// - extract_mesh / extract_cloud: slab by slab (volume_common.hpp: MeshSlab), per-voxel passes (cube cases,
//   owned-edge masks), CUB exclusive scans of the per-voxel counts (deterministic: integer sums), then
//   per-voxel writes at the scanned offsets, appended to the host mesh. Vertex and triangle order is therefore
//   by voxel / cube linear index, then axis / table order, as on the CPU.
// Every method synchronizes the backend's stream before returning; inputs (depth, maps) must be complete on
// entry. The extraction's scratch (one slab's) is allocated per call: extraction is a once-per-sequence operation.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "backend.hpp"
#include "marching_cubes_tables.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"
#include "sparse_volume.hpp"
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

/// (i, j, k) of a thread of a 1-D launch over the voxels [first, last) (linear index, x fastest).
struct VoxelThread {
  int i, j, k;
  long long v;
  bool valid;
};
__device__ __forceinline__ VoxelThread voxel_thread(const VolumeGrid& g, long long first, long long last) {
  VoxelThread t;
  t.v = first + static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  t.valid = t.v < last;
  const long long plane = static_cast<long long>(g.nx) * g.ny;
  t.k = static_cast<int>(t.v / plane);
  const long long r = t.v - static_cast<long long>(t.k) * plane;
  t.j = static_cast<int>(r / g.nx);
  t.i = static_cast<int>(r - static_cast<long long>(t.j) * g.nx);
  return t;
}

__global__ void cube_case_kernel(const Voxel* vol, VolumeGrid g, long long first, long long last,
                                 SliceWindow<std::uint8_t> cases) {
  const VoxelThread t = voxel_thread(g, first, last);
  if (!t.valid) return;
  int c = 0;
  if (t.i + 1 < g.nx && t.j + 1 < g.ny && t.k + 1 < g.nz) c = cube_case(vol, g, t.i, t.j, t.k);
  cases[t.v] = static_cast<std::uint8_t>(c);
}

__global__ void edge_mask_kernel(const Voxel* vol, SliceWindow<const std::uint8_t> cases, VolumeGrid g, long long first,
                                 long long last, SliceWindow<std::uint8_t> masks) {
  const VoxelThread t = voxel_thread(g, first, last);
  if (!t.valid) return;
  masks[t.v] = static_cast<std::uint8_t>(edge_mask(vol, cases, g, t.i, t.j, t.k));
}

__global__ void cloud_mask_kernel(const Voxel* vol, VolumeGrid g, long long first, long long last,
                                  SliceWindow<std::uint8_t> masks) {
  const VoxelThread t = voxel_thread(g, first, last);
  if (!t.valid) return;
  masks[t.v] = static_cast<std::uint8_t>(cloud_mask(vol, g, t.i, t.j, t.k));
}

/// The vertices of the voxels [first, last), at their offsets from the slab's first vertex.
__global__ void edge_vertex_kernel(const Voxel* vol, const ColorVoxel* colors, VolumeGrid g, long long first,
                                   long long last, SliceWindow<const std::uint8_t> masks,
                                   SliceWindow<const std::int32_t> offset, float* positions, float* normals,
                                   std::uint8_t* rgb) {
  const VoxelThread t = voxel_thread(g, first, last);
  if (!t.valid) return;
  const int mask = masks[t.v];
  if (mask == 0) return;
  long long out = offset[t.v];
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

/// The triangles of the cubes [first, last), at their offsets from the slab's first triangle.
__global__ void triangle_kernel(VolumeGrid g, long long first, long long last, SliceWindow<const std::uint8_t> cases,
                                SliceWindow<const std::uint8_t> masks, SliceWindow<const std::int32_t> vertex_offset,
                                std::int32_t first_vertex, SliceWindow<const std::int32_t> triangle_offset,
                                std::int32_t* triangles) {
  const VoxelThread t = voxel_thread(g, first, last);
  if (!t.valid) return;
  const int cube = cases[t.v];
  const int count = c_mc_triangle_count[cube];
  if (count == 0) return;
  emit_cube_triangles(&c_mc_triangles[cube][0], count, g, t.i, t.j, t.k, masks, vertex_offset, first_vertex,
                      triangles + 3LL * triangle_offset[t.v]);
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

  Mesh extract_mesh(int slab_slices_requested) override {
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    const VolumeGrid g = grid_;
    const long long plane = static_cast<long long>(g.nx) * g.ny;
    const int slices = slab_slices(g, slab_slices_requested);
    // Sized for the largest slab: cube cases over slices + 2 slices, masks and vertex offsets over slices + 1.
    const long long window = plane * std::min(slices + 1, g.nz);
    DeviceBuffer<std::uint8_t> cases(static_cast<std::size_t>(plane * std::min(slices + 2, g.nz)), st);
    DeviceBuffer<std::uint8_t> masks(static_cast<std::size_t>(window), st);
    DeviceBuffer<std::int32_t> vertex_offset(static_cast<std::size_t>(window + 1), st);
    DeviceBuffer<std::int32_t> triangle_offset(static_cast<std::size_t>(plane * slices + 1), st);
    DeviceBuffer<float> positions, normals;
    DeviceBuffer<std::int32_t> ids;
    DeviceBuffer<std::uint8_t> rgb;
    const bool color = colors_.size() > 0;
    const dim3 block(kVoxelBlock);
    Mesh mesh;
    long long vertices = 0, triangles = 0;
    for (int k0 = 0; k0 < g.nz; k0 += slices) {
      const MeshSlab s = mesh_slab(g, k0, slices);
      const long long case_first = plane * s.case_first, first = plane * s.k0, last = plane * s.k1, end = plane * s.end;
      const SliceWindow<const std::uint8_t> cases_read{cases.data(), case_first}, masks_read{masks.data(), first};
      const SliceWindow<const std::int32_t> vertex_read{vertex_offset.data(), first},
          triangle_read{triangle_offset.data(), first};
      cube_case_kernel<<<launch_grid(end - case_first), block, 0, st>>>(
          voxels_.data(), g, case_first, end, SliceWindow<std::uint8_t>{cases.data(), case_first});
      S3D_CUDA_CHECK_LAUNCH();
      edge_mask_kernel<<<launch_grid(end - first), block, 0, st>>>(voxels_.data(), cases_read, g, first, end,
                                                                   SliceWindow<std::uint8_t>{masks.data(), first});
      S3D_CUDA_CHECK_LAUNCH();
      // Vertices over [k0, end) (slice k1's continue from this slab's last), triangles over the slab's cubes.
      const long long slab_vertices =
          exclusive_scan(thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                                         MaskCount{masks.data(), end - first}),
                         vertex_offset.data(), end - first + 1, last - first);
      const long long slab_triangles = exclusive_scan(
          thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                          TriangleCount{cases.data() + (first - case_first), last - first}),
          triangle_offset.data(), last - first + 1, last - first);
      check_mesh_size(vertices + slab_vertices, triangles + slab_triangles);
      positions.resize(static_cast<std::size_t>(3 * slab_vertices), st);
      normals.resize(positions.size(), st);
      rgb.resize(color ? positions.size() : 0, st);
      ids.resize(static_cast<std::size_t>(3 * slab_triangles), st);
      if (slab_vertices > 0) {
        edge_vertex_kernel<<<launch_grid(last - first), block, 0, st>>>(
            voxels_.data(), color ? colors_.data() : nullptr, g, first, last, masks_read, vertex_read, positions.data(),
            normals.data(), rgb.data());
        S3D_CUDA_CHECK_LAUNCH();
      }
      if (slab_triangles > 0) {
        triangle_kernel<<<launch_grid(last - first), block, 0, st>>>(g, first, last, cases_read, masks_read,
                                                                     vertex_read, static_cast<std::int32_t>(vertices),
                                                                     triangle_read, ids.data());
        S3D_CUDA_CHECK_LAUNCH();
      }
      mesh.vertices.resize(static_cast<std::size_t>(3 * (vertices + slab_vertices)));
      mesh.normals.resize(mesh.vertices.size());
      if (color) mesh.colors.resize(mesh.vertices.size());
      mesh.triangles.resize(static_cast<std::size_t>(3 * (triangles + slab_triangles)));
      positions.copy_to_host_async(mesh.vertices.data() + 3 * vertices, positions.size(), st);
      normals.copy_to_host_async(mesh.normals.data() + 3 * vertices, normals.size(), st);
      if (color) rgb.copy_to_host_async(mesh.colors.data() + 3 * vertices, rgb.size(), st);
      ids.copy_to_host_async(mesh.triangles.data() + 3 * triangles, ids.size(), st);
      stream_.synchronize();  // the host arrays may move when the next slab grows them
      vertices += slab_vertices;
      triangles += slab_triangles;
    }
    return mesh;
  }

  SurfaceCloud extract_cloud(int slab_slices_requested) override {
    ScopedDevice scope(device_.index());
    cudaStream_t st = stream_.get();
    const VolumeGrid g = grid_;
    const long long plane = static_cast<long long>(g.nx) * g.ny;
    const int slices = slab_slices(g, slab_slices_requested);
    DeviceBuffer<std::uint8_t> masks(static_cast<std::size_t>(plane * slices), st);
    DeviceBuffer<std::int32_t> offset(static_cast<std::size_t>(plane * slices + 1), st);
    DeviceBuffer<float> positions, normals;
    DeviceBuffer<std::uint8_t> rgb;
    const bool color = colors_.size() > 0;
    const dim3 block(kVoxelBlock);
    SurfaceCloud cloud;
    long long points = 0;
    for (int k0 = 0; k0 < g.nz; k0 += slices) {
      const MeshSlab s = mesh_slab(g, k0, slices);
      const long long first = plane * s.k0, last = plane * s.k1;
      cloud_mask_kernel<<<launch_grid(last - first), block, 0, st>>>(voxels_.data(), g, first, last,
                                                                     SliceWindow<std::uint8_t>{masks.data(), first});
      S3D_CUDA_CHECK_LAUNCH();
      const long long slab_points =
          exclusive_scan(thrust::make_transform_iterator(thrust::counting_iterator<long long>(0),
                                                         MaskCount{masks.data(), last - first}),
                         offset.data(), last - first + 1, last - first);
      positions.resize(static_cast<std::size_t>(3 * slab_points), st);
      normals.resize(positions.size(), st);
      rgb.resize(color ? positions.size() : 0, st);
      if (slab_points > 0) {
        edge_vertex_kernel<<<launch_grid(last - first), block, 0, st>>>(
            voxels_.data(), color ? colors_.data() : nullptr, g, first, last,
            SliceWindow<const std::uint8_t>{masks.data(), first}, SliceWindow<const std::int32_t>{offset.data(), first},
            positions.data(), normals.data(), rgb.data());
        S3D_CUDA_CHECK_LAUNCH();
      }
      cloud.points.resize(static_cast<std::size_t>(3 * (points + slab_points)));
      cloud.normals.resize(cloud.points.size());
      if (color) cloud.colors.resize(cloud.points.size());
      positions.copy_to_host_async(cloud.points.data() + 3 * points, positions.size(), st);
      normals.copy_to_host_async(cloud.normals.data() + 3 * points, normals.size(), st);
      if (color) rgb.copy_to_host_async(cloud.colors.data() + 3 * points, rgb.size(), st);
      stream_.synchronize();  // the host arrays may move when the next slab grows them
      points += slab_points;
    }
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

  static dim3 launch_grid(long long voxels) { return dim3(detail_grid(voxels, kVoxelBlock)); }

  void clear() {
    const long long n = grid_.count();
    clear_kernel<<<static_cast<unsigned int>((n + 255) / 256), 256, 0, stream_.get()>>>(
        voxels_.data(), colors_.size() > 0 ? colors_.data() : nullptr, n);
    S3D_CUDA_CHECK_LAUNCH();
  }

  /// Exclusive sum of `items` counts into `out`; returns out[at]. Synchronizes the stream.
  template <typename Iterator>
  long long exclusive_scan(Iterator in, std::int32_t* out, long long items, long long at) {
    cudaStream_t st = stream_.get();
    std::size_t bytes = 0;
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items, st));
    scratch_.resize(bytes > 0 ? bytes : 1, st);
    S3D_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch_.data(), bytes, in, out, items, st));
    S3D_CUDA_CHECK_LAUNCH();
    std::int32_t total = 0;
    S3D_CUDA_CHECK(cudaMemcpyAsync(&total, out + at, sizeof total, cudaMemcpyDeviceToHost, st));
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
  if (params.kind == VolumeKind::kSparse) return make_cuda_sparse_volume(device, params);
  params.validate();
  return std::make_unique<CudaVolume>(device, params);
}

}  // namespace s3d::fusion::detail
