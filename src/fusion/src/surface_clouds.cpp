// The engine's mesh and zero-crossing points as core point clouds (what the PLY writer takes).
#include <cstring>

#include "s3d/fusion/sequence.hpp"

namespace s3d::fusion {
namespace {

/// Points with per-point nx ny nz (float) and, when `colors` holds 3 per point, red green blue (uchar): the vertex
/// element that a mesh and a surface cloud share.
PointCloud oriented_points(const std::vector<float>& xyz, const std::vector<float>& normals,
                           const std::vector<std::uint8_t>& colors) {
  PointCloud c;
  c.xyz = xyz;
  const std::size_t n = c.size();
  const char* names[3] = {"nx", "ny", "nz"};
  for (int a = 0; a < 3; ++a) {
    AttributeColumn& col = c.add_attribute(names[a], ScalarType::kFloat32);
    for (std::size_t i = 0; i < n && 3 * i + a < normals.size(); ++i) col.set_value(i, 0, normals[3 * i + a]);
  }
  if (colors.size() == 3 * n && n > 0) {
    const char* rgb[3] = {"red", "green", "blue"};
    for (int a = 0; a < 3; ++a) {
      AttributeColumn& col = c.add_attribute(rgb[a], ScalarType::kUint8);
      for (std::size_t i = 0; i < n; ++i) col.set_value(i, 0, colors[3 * i + a]);
    }
  }
  return c;
}

}  // namespace

PointCloud mesh_to_cloud(const Mesh& mesh) {
  PointCloud c = oriented_points(mesh.vertices, mesh.normals, mesh.colors);
  CloudElement faces;
  faces.name = "face";
  faces.count = mesh.triangles.size() / 3;
  AttributeColumn idx;
  idx.name = "vertex_indices";
  idx.type = ScalarType::kInt32;
  idx.is_list = true;
  idx.count_type = ScalarType::kUint8;
  idx.bytes.resize(faces.count * 3 * sizeof(std::int32_t));
  if (!idx.bytes.empty()) std::memcpy(idx.bytes.data(), mesh.triangles.data(), idx.bytes.size());
  idx.offsets.resize(faces.count + 1);
  for (std::size_t t = 0; t <= faces.count; ++t) idx.offsets[t] = 3 * t;
  faces.properties.push_back(std::move(idx));
  c.elements.push_back(std::move(faces));
  c.meta.points_element_index = 0;
  c.meta.comments.push_back("icp-fuse TSDF mesh (marching cubes), world frame, metres");
  return c;
}

PointCloud surface_to_cloud(const SurfaceCloud& s) {
  PointCloud c = oriented_points(s.points, s.normals, s.colors);
  c.meta.comments.push_back("icp-fuse TSDF zero crossing, world frame, metres");
  return c;
}

}  // namespace s3d::fusion
