// The TSDF volume, CPU backend (the oracle): the per-voxel and per-pixel math of tsdf_math.hpp in OpenMP
// loops. Every output element is written by exactly one iteration and the compactions (mesh vertices and
// triangles, cloud points) use a serial exclusive scan over per-voxel counts, so the result does not depend on
// the thread count and equals the CUDA backend's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend.hpp"
#include "huge_page_allocator.hpp"
#include "integrate_lanes.hpp"
#include "marching_cubes_tables.hpp"
#include "raycast_lanes.hpp"
#include "raycast_skipping.hpp"
#include "s3d/core/errors.hpp"
#include "sparse_volume.hpp"
#include "tsdf_math.hpp"
#include "volume_common.hpp"

namespace s3d::fusion::detail {
namespace {

/// The vertices on voxel (i, j, k)'s +x, +y, +z edges that `mask` selects, written from slot `out` on (the
/// mesh's shared vertices and the surface cloud use the same points); their colours too when `colors` is set.
void write_edge_vertices(const Voxel* vol, const ColorVoxel* colors, const VolumeGrid& g, int i, int j, int k, int mask,
                         long long out, float* pos, float* nor, std::uint8_t* rgb) {
  for (int axis = 0; axis < 3; ++axis) {
    if (!(mask & (1 << axis))) continue;
    Vec3f p, nn;
    edge_vertex(vol, g, i, j, k, axis, p, nn);
    store3(pos, out, p);
    store3(nor, out, nn);
    if (colors) edge_color(vol, colors, g, i, j, k, axis, rgb + 3 * out);
    ++out;
  }
}

class CpuVolume final : public VolumeBackend {
 public:
  explicit CpuVolume(const VolumeParams& params) : grid_(make_grid(params)) {
    voxels_.assign(static_cast<std::size_t>(grid_.count()), Voxel{0, 0});
    if (params.color) colors_.assign(voxels_.size(), ColorVoxel{0, 0, 0, 0});
    bricks_.reset(grid_);
  }

  void reset() override {
    std::fill(voxels_.begin(), voxels_.end(), Voxel{0, 0});
    std::fill(colors_.begin(), colors_.end(), ColorVoxel{0, 0, 0, 0});
    bricks_.reset(grid_);
    distances_current_ = false;
  }

  void integrate(ImageView<const float> depth_m, const std::uint8_t* rgb, const CameraIntrinsics& camera,
                 const Rigid& camera_to_world) override {
    if (depth_m.empty()) return;
    distances_current_ = false;
    BrickMap& bricks = bricks_;
    const int shift = bricks.shift();
    const bool marking = marking_;
    const IntegrateArgs a = make_integrate_args(grid_, depth_m, camera, camera_to_world);
    Voxel* vol = voxels_.data();
    ColorVoxel* colors = colors_.empty() || rgb == nullptr ? nullptr : colors_.data();
    const float* depth = depth_m.data;
    const long long pitch = depth_m.pitch;
    // AVX2, 8 voxels at a time (marks: only after a ray cast, which skips empty space by them).
    if (integrate_lanes_cpu(vol, colors, a, depth, pitch, rgb, marking ? &bricks : nullptr, &culling_)) return;
    const VolumeGrid g = grid_;
#pragma omp parallel for collapse(2) schedule(dynamic, 64)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        int k0, k1;
        if (!column_range(a, i, j, k0, k1)) continue;
        std::uint64_t negative = 0;  // bit b: a voxel of this column in brick layer b was stored negative
        for (int k = k0; k <= k1; ++k) {
          float tsdf;
          long long pixel;
          if (!tsdf_sample(a, depth, pitch, i, j, k, tsdf, pixel)) continue;
          const long long index = g.index(i, j, k);
          const Voxel fused = tsdf_fuse(vol[index], tsdf, g.max_weight);
          vol[index] = fused;
          if (marking) negative |= static_cast<std::uint64_t>(fused.tsdf < 0) << (k >> shift);
          if (colors && takes_color(tsdf)) colors[index] = color_fuse(colors[index], rgb + 3 * pixel, g.max_weight);
        }
        for (; negative != 0; negative &= negative - 1) bricks.mark(i, j, __builtin_ctzll(negative) << shift);
      }
  }

  void raycast(const CameraIntrinsics& camera, const Rigid& camera_to_world, Maps out) override {
    const RaycastArgs a = make_raycast_args(grid_, camera, camera_to_world, out.width, out.height);
    const Voxel* vol = voxels_.data();
    // The march skips empty space. The first ray cast marks the bricks from the voxels; from then on the
    // integration keeps the marks (a volume that is never ray cast, frame to frame, does not pay for them).
    if (!marking_) {
      bricks_.build(vol, grid_);
      marking_ = true;
      distances_current_ = true;
    }
    if (raycast_lanes_cpu(vol, &bricks_, a, out.vertices, out.normals)) return;  // AVX2: 8 rays at a time, by marks
    if (!distances_current_) bricks_.update_distances();                         // the scalar march skips by distances
    distances_current_ = true;
    raycast_skipping_cpu(vol, bricks_, a, out.vertices, out.normals);
  }

  Mesh extract_mesh(int slab_slices_requested) override {
    const VolumeGrid g = grid_;
    const Voxel* vol = voxels_.data();
    const ColorVoxel* colors = colors_.empty() ? nullptr : colors_.data();
    const long long plane = static_cast<long long>(g.nx) * g.ny;
    const int slices = slab_slices(g, slab_slices_requested);
    std::vector<std::uint8_t> cases, masks;
    std::vector<std::int32_t> vertex_offset, triangle_offset;
    Mesh mesh;
    long long vertices = 0, triangles = 0;
    for (int k0 = 0; k0 < g.nz; k0 += slices) {
      const MeshSlab s = mesh_slab(g, k0, slices);
      const long long case_first = plane * s.case_first, first = plane * s.k0, last = plane * s.k1, end = plane * s.end;
      cases.assign(static_cast<std::size_t>(end - case_first), 0);
      masks.assign(static_cast<std::size_t>(end - first), 0);
      const SliceWindow<std::uint8_t> case_at{cases.data(), case_first}, mask_at{masks.data(), first};
      const int case_end = std::min(s.end, g.nz - 1);  // the last slice's cubes are empty
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = s.case_first; k < case_end; ++k)
        for (int j = 0; j < g.ny - 1; ++j)
          for (int i = 0; i < g.nx - 1; ++i)
            case_at[g.index(i, j, k)] = static_cast<std::uint8_t>(cube_case(vol, g, i, j, k));
      const SliceWindow<const std::uint8_t> cases_read{cases.data(), case_first}, masks_read{masks.data(), first};
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = s.k0; k < s.end; ++k)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i)
            mask_at[g.index(i, j, k)] = static_cast<std::uint8_t>(edge_mask(vol, cases_read, g, i, j, k));
      // Exclusive scans from the slab's first voxel: vertices over [k0, end) (slice k1's are the next slab's,
      // counted on from this slab's last), triangles over the slab's cubes.
      vertex_offset.resize(static_cast<std::size_t>(end - first));
      triangle_offset.resize(static_cast<std::size_t>(last - first));
      long long slab_vertices = 0, slab_triangles = 0, running = 0;
      for (long long v = first; v < end; ++v) {
        if (v == last) slab_vertices = running;
        vertex_offset[v - first] = static_cast<std::int32_t>(running);
        running += mask_count(masks[v - first]);
        if (v < last) {
          triangle_offset[v - first] = static_cast<std::int32_t>(slab_triangles);
          slab_triangles += kMcTriangleCount[cases[v - case_first]];
        }
      }
      if (last == end) slab_vertices = running;
      check_mesh_size(vertices + slab_vertices, triangles + slab_triangles);
      mesh.vertices.resize(static_cast<std::size_t>(3 * (vertices + slab_vertices)));
      mesh.normals.resize(mesh.vertices.size());
      if (colors) mesh.colors.resize(mesh.vertices.size());
      mesh.triangles.resize(static_cast<std::size_t>(3 * (triangles + slab_triangles)));
      float* pos = mesh.vertices.data();
      float* nor = mesh.normals.data();
      std::uint8_t* rgb = mesh.colors.data();
      std::int32_t* tri = mesh.triangles.data() + 3 * triangles;
      const SliceWindow<const std::int32_t> offset_read{vertex_offset.data(), first};
      const auto first_vertex = static_cast<std::int32_t>(vertices);
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = s.k0; k < s.k1; ++k)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i) {
            const long long v = g.index(i, j, k);
            const int mask = masks_read[v];
            if (mask == 0) continue;
            write_edge_vertices(vol, colors, g, i, j, k, mask, vertices + offset_read[v], pos, nor, rgb);
          }
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = s.k0; k < std::min(s.k1, g.nz - 1); ++k)
        for (int j = 0; j < g.ny - 1; ++j)
          for (int i = 0; i < g.nx - 1; ++i) {
            const long long c = g.index(i, j, k);
            const int cube = cases_read[c];
            emit_cube_triangles(&kMcTriangles[cube][0], kMcTriangleCount[cube], g, i, j, k, masks_read, offset_read,
                                first_vertex, tri + 3LL * triangle_offset[c - first]);
          }
      vertices += slab_vertices;
      triangles += slab_triangles;
    }
    return mesh;
  }

  SurfaceCloud extract_cloud(int slab_slices_requested) override {
    const VolumeGrid g = grid_;
    const Voxel* vol = voxels_.data();
    const ColorVoxel* colors = colors_.empty() ? nullptr : colors_.data();
    const long long plane = static_cast<long long>(g.nx) * g.ny;
    const int slices = slab_slices(g, slab_slices_requested);
    std::vector<std::uint8_t> masks;
    std::vector<std::int64_t> offset;
    SurfaceCloud cloud;
    long long points = 0;
    for (int k0 = 0; k0 < g.nz; k0 += slices) {
      const MeshSlab s = mesh_slab(g, k0, slices);
      const long long first = plane * s.k0, last = plane * s.k1;
      masks.resize(static_cast<std::size_t>(last - first));
      const SliceWindow<std::uint8_t> mask_at{masks.data(), first};
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = s.k0; k < s.k1; ++k)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i)
            mask_at[g.index(i, j, k)] = static_cast<std::uint8_t>(cloud_mask(vol, g, i, j, k));
      offset.resize(masks.size());
      long long slab_points = 0;
      for (std::size_t v = 0; v < masks.size(); ++v) {
        offset[v] = points + slab_points;
        slab_points += mask_count(masks[v]);
      }
      cloud.points.resize(static_cast<std::size_t>(3 * (points + slab_points)));
      cloud.normals.resize(cloud.points.size());
      if (colors) cloud.colors.resize(cloud.points.size());
      float* pos = cloud.points.data();
      float* nor = cloud.normals.data();
      std::uint8_t* rgb = cloud.colors.data();
#pragma omp parallel for collapse(2) schedule(static)
      for (int k = s.k0; k < s.k1; ++k)
        for (int j = 0; j < g.ny; ++j)
          for (int i = 0; i < g.nx; ++i) {
            const long long v = g.index(i, j, k) - first;
            write_edge_vertices(vol, colors, g, i, j, k, masks[v], offset[v], pos, nor, rgb);
          }
      points += slab_points;
    }
    return cloud;
  }

  void download(std::vector<std::int16_t>& tsdf, std::vector<std::int16_t>& weight) override {
    tsdf.resize(voxels_.size());
    weight.resize(voxels_.size());
    for (std::size_t v = 0; v < voxels_.size(); ++v) {
      tsdf[v] = voxels_[v].tsdf;
      weight[v] = voxels_[v].weight;
    }
  }

  void download_colors(std::vector<std::uint8_t>& rgbw) override {
    rgbw.resize(4 * colors_.size());
    if (!colors_.empty()) std::memcpy(rgbw.data(), colors_.data(), rgbw.size());
  }

 private:
  VolumeGrid grid_;
  std::vector<Voxel, HugePageAllocator<Voxel>> voxels_;
  std::vector<ColorVoxel, HugePageAllocator<ColorVoxel>> colors_;  // empty without colour
  IntegrateCulling culling_;                                       // integrate_lanes_cpu's scratch
  BrickMap bricks_;       // marked by the integration once marking_; distances current when distances_current_
  bool marking_ = false;  // set by the first ray cast
  bool distances_current_ = false;
};

}  // namespace

std::unique_ptr<VolumeBackend> make_cpu_volume(const VolumeParams& params) {
  if (params.kind == VolumeKind::kSparse) return make_cpu_sparse_volume(params);
  params.validate();
  return std::make_unique<CpuVolume>(params);
}

}  // namespace s3d::fusion::detail
