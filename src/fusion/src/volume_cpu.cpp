// The TSDF volume, CPU backend (the oracle): the per-voxel and per-pixel math of tsdf_math.hpp in OpenMP
// loops. Every output element is written by exactly one iteration and the compactions (mesh vertices and
// triangles, cloud points) use a serial exclusive scan over per-voxel counts, so the result does not depend on
// the thread count and equals the CUDA backend's.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend.hpp"
#include "integrate_lanes.hpp"
#include "marching_cubes_tables.hpp"
#include "raycast_lanes.hpp"
#include "raycast_skipping.hpp"
#include "s3d/core/errors.hpp"
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
    // AVX2, 8 voxels at a time, where it need not colour or mark (marks: only after a skipping ray cast).
    if (colors == nullptr && !marking && integrate_lanes_cpu(vol, a, depth, pitch)) return;
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
    if (raycast_lanes_cpu(vol, a, out.vertices, out.normals)) return;  // AVX2: 8 rays at a time, no bricks
    // Elsewhere the march skips empty space. The first ray cast marks the bricks from the voxels; from then on
    // the integration keeps the marks (a volume that is never ray cast, frame to frame, does not pay for them).
    if (!marking_) {
      bricks_.build(vol, grid_);
      marking_ = true;
    } else if (!distances_current_) {
      bricks_.update_distances();
    }
    distances_current_ = true;
    raycast_skipping_cpu(vol, bricks_, a, out.vertices, out.normals);
  }

  Mesh extract_mesh() override {
    const VolumeGrid g = grid_;
    const Voxel* vol = voxels_.data();
    const long long n = g.count();
    std::vector<std::uint8_t> cases(static_cast<std::size_t>(n), 0), masks(static_cast<std::size_t>(n), 0);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < g.nz - 1; ++k)
      for (int j = 0; j < g.ny - 1; ++j)
        for (int i = 0; i < g.nx - 1; ++i)
          cases[g.index(i, j, k)] = static_cast<std::uint8_t>(cube_case(vol, g, i, j, k));
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i)
          masks[g.index(i, j, k)] = static_cast<std::uint8_t>(edge_mask(vol, cases.data(), g, i, j, k));
    // Exclusive scans: vertices per voxel, triangles per cube.
    std::vector<std::int32_t> vertex_offset(static_cast<std::size_t>(n)), triangle_offset(static_cast<std::size_t>(n));
    long long vertices = 0, triangles = 0;
    for (long long v = 0; v < n; ++v) {
      vertex_offset[v] = static_cast<std::int32_t>(vertices);
      triangle_offset[v] = static_cast<std::int32_t>(triangles);
      vertices += mask_count(masks[v]);
      triangles += kMcTriangleCount[cases[v]];
    }
    S3D_EXPECTS(vertices < (1LL << 31) && triangles < (1LL << 31) / 3, "extract_mesh: the mesh exceeds 2^31 entries");
    Mesh mesh;
    mesh.vertices.resize(static_cast<std::size_t>(3 * vertices));
    mesh.normals.resize(static_cast<std::size_t>(3 * vertices));
    mesh.triangles.resize(static_cast<std::size_t>(3 * triangles));
    const ColorVoxel* colors = colors_.empty() ? nullptr : colors_.data();
    if (colors) mesh.colors.resize(static_cast<std::size_t>(3 * vertices));
    float* pos = mesh.vertices.data();
    float* nor = mesh.normals.data();
    std::uint8_t* rgb = mesh.colors.data();
    std::int32_t* tri = mesh.triangles.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i) {
          const long long v = g.index(i, j, k);
          const int mask = masks[v];
          if (mask == 0) continue;
          write_edge_vertices(vol, colors, g, i, j, k, mask, vertex_offset[v], pos, nor, rgb);
        }
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < g.nz - 1; ++k)
      for (int j = 0; j < g.ny - 1; ++j)
        for (int i = 0; i < g.nx - 1; ++i) {
          const long long c = g.index(i, j, k);
          emit_cube_triangles(&kMcTriangles[cases[c]][0], kMcTriangleCount[cases[c]], g, i, j, k, masks.data(),
                              vertex_offset.data(), tri + 3LL * triangle_offset[c]);
        }
    return mesh;
  }

  SurfaceCloud extract_cloud() override {
    const VolumeGrid g = grid_;
    const Voxel* vol = voxels_.data();
    const long long n = g.count();
    std::vector<std::uint8_t> masks(static_cast<std::size_t>(n));
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i) masks[g.index(i, j, k)] = static_cast<std::uint8_t>(cloud_mask(vol, g, i, j, k));
    std::vector<std::int64_t> offset(static_cast<std::size_t>(n));
    long long points = 0;
    for (long long v = 0; v < n; ++v) {
      offset[v] = points;
      points += mask_count(masks[v]);
    }
    SurfaceCloud cloud;
    cloud.points.resize(static_cast<std::size_t>(3 * points));
    cloud.normals.resize(static_cast<std::size_t>(3 * points));
    const ColorVoxel* colors = colors_.empty() ? nullptr : colors_.data();
    if (colors) cloud.colors.resize(static_cast<std::size_t>(3 * points));
    float* pos = cloud.points.data();
    float* nor = cloud.normals.data();
    std::uint8_t* rgb = cloud.colors.data();
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i) {
          const long long v = g.index(i, j, k);
          const int mask = masks[v];
          write_edge_vertices(vol, colors, g, i, j, k, mask, offset[v], pos, nor, rgb);
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
  std::vector<Voxel> voxels_;
  std::vector<ColorVoxel> colors_;  // empty without colour
  BrickMap bricks_;       // marked by the integration once marking_; distances current when distances_current_
  bool marking_ = false;  // set by the first ray cast
  bool distances_current_ = false;
};

}  // namespace

std::unique_ptr<VolumeBackend> make_cpu_volume(const VolumeParams& params) {
  validate_volume(params);
  return std::make_unique<CpuVolume>(params);
}

}  // namespace s3d::fusion::detail
