// The sparse volume's mesh and cloud on the CPU: per-voxel passes over the blocks in key order, serial
// exclusive scans of the counts, then per-voxel writes at the scanned offsets (every output element written by
// one iteration), so the result depends neither on the thread count nor on the pool's slot assignment.
#include <cstdint>
#include <vector>

#include "marching_cubes_tables.hpp"
#include "sparse_volume_cpu.hpp"
#include "sparse_volume_extract.hpp"
#include "volume_common.hpp"

namespace s3d::fusion::detail {
namespace {

/// Calls f(nb, i, p) for every voxel of every block in key order (OpenMP over blocks): nb the block's
/// neighbourhood, i the voxel's index in the per-voxel arrays, p its local coordinates.
template <typename F>
void for_each_voxel(const SparseHostVolume& v, F f) {
  const long long blocks = static_cast<long long>(v.keys->size());
#pragma omp parallel for schedule(dynamic, 4)
  for (long long b = 0; b < blocks; ++b) {
    BlockNeighbourhood nb;
    nb.load(v.hash, unpack_block((*v.keys)[static_cast<std::size_t>(b)]));
    for (int l = 0; l < kBlockVoxels; ++l) f(nb, b * kBlockVoxels + l, local_voxel(l));
  }
}

/// Exclusive scan of `count(item)` over `n` items into `offset`; returns the total.
template <typename Count>
long long exclusive_scan(long long n, std::vector<std::int64_t>& offset, Count count) {
  offset.resize(static_cast<std::size_t>(n));
  long long running = 0;
  for (long long i = 0; i < n; ++i) {
    offset[static_cast<std::size_t>(i)] = running;
    running += count(i);
  }
  return running;
}

}  // namespace

Mesh sparse_mesh_cpu(const SparseHostVolume& v) {
  const long long n = static_cast<long long>(v.keys->size()) * kBlockVoxels;
  std::vector<std::uint8_t> masks(static_cast<std::size_t>(n)), cases(static_cast<std::size_t>(n));
  for_each_voxel(v, [&](const BlockNeighbourhood& nb, long long i, LocalVoxel p) {
    masks[i] = static_cast<std::uint8_t>(sparse_edge_mask(nb, v.voxels, p.x, p.y, p.z));
    cases[i] = static_cast<std::uint8_t>(sparse_cube_case(nb, v.voxels, p.x, p.y, p.z));
  });
  std::vector<std::int64_t> vertex_offset, triangle_offset;
  const long long vertices = exclusive_scan(n, vertex_offset, [&](long long i) { return mask_count(masks[i]); });
  const long long triangles =
      exclusive_scan(n, triangle_offset, [&](long long i) { return static_cast<int>(kMcTriangleCount[cases[i]]); });
  check_mesh_size(vertices, triangles);
  Mesh mesh;
  mesh.vertices.resize(static_cast<std::size_t>(3 * vertices));
  mesh.normals.resize(mesh.vertices.size());
  if (v.colors) mesh.colors.resize(mesh.vertices.size());
  mesh.triangles.resize(static_cast<std::size_t>(3 * triangles));
  const int* order = v.order->data();
  for_each_voxel(v, [&](const BlockNeighbourhood& nb, long long i, LocalVoxel p) {
    if (masks[i] != 0)
      sparse_write_vertices(nb, v.voxels, v.colors, v.grid, p.x, p.y, p.z, masks[i], vertex_offset[i],
                            mesh.vertices.data(), mesh.normals.data(), mesh.colors.data());
    const int cube = cases[i];
    if (kMcTriangleCount[cube] != 0)
      sparse_emit_triangles(&kMcTriangles[cube][0], kMcTriangleCount[cube], nb, order, masks.data(),
                            vertex_offset.data(), p.x, p.y, p.z, mesh.triangles.data() + 3LL * triangle_offset[i]);
  });
  return mesh;
}

SurfaceCloud sparse_cloud_cpu(const SparseHostVolume& v) {
  const long long n = static_cast<long long>(v.keys->size()) * kBlockVoxels;
  std::vector<std::uint8_t> masks(static_cast<std::size_t>(n));
  for_each_voxel(v, [&](const BlockNeighbourhood& nb, long long i, LocalVoxel p) {
    masks[i] = static_cast<std::uint8_t>(sparse_cloud_mask(nb, v.voxels, p.x, p.y, p.z));
  });
  std::vector<std::int64_t> offset;
  const long long points = exclusive_scan(n, offset, [&](long long i) { return mask_count(masks[i]); });
  check_mesh_size(points, 0);
  SurfaceCloud cloud;
  cloud.points.resize(static_cast<std::size_t>(3 * points));
  cloud.normals.resize(cloud.points.size());
  if (v.colors) cloud.colors.resize(cloud.points.size());
  for_each_voxel(v, [&](const BlockNeighbourhood& nb, long long i, LocalVoxel p) {
    if (masks[i] != 0)
      sparse_write_vertices(nb, v.voxels, v.colors, v.grid, p.x, p.y, p.z, masks[i], offset[i], cloud.points.data(),
                            cloud.normals.data(), cloud.colors.data());
  });
  return cloud;
}

}  // namespace s3d::fusion::detail
