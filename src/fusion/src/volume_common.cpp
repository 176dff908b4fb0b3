// Host set-up shared by both volume backends (see volume_common.hpp).
#include "volume_common.hpp"

#include <algorithm>
#include <cmath>

#include "s3d/core/errors.hpp"

namespace s3d::fusion::detail {

IntegrateArgs make_integrate_args(const VolumeGrid& g, ImageView<const float> depth, const CameraIntrinsics& camera,
                                  const Rigid& camera_to_world) {
  IntegrateArgs a{};
  a.grid = g;
  a.world_to_camera = inverse_rigid(camera_to_world);
  a.camera_centre = {camera_to_world.t[0], camera_to_world.t[1], camera_to_world.t[2]};
  a.fx = camera.fx;
  a.fy = camera.fy;
  a.cx = camera.cx;
  a.cy = camera.cy;
  a.width = depth.width;
  a.height = depth.height;
  return a;
}

RaycastArgs make_raycast_args(const VolumeGrid& g, const CameraIntrinsics& camera, const Rigid& camera_to_world,
                              int width, int height) {
  RaycastArgs a{};
  a.grid = g;
  a.camera_to_world = camera_to_world;
  a.fx = camera.fx;
  a.fy = camera.fy;
  a.cx = camera.cx;
  a.cy = camera.cy;
  a.width = width;
  a.height = height;
  return a;
}

int slab_slices(const VolumeGrid& g, int requested) {
  if (requested > 0) return std::min(requested, g.nz);
  const long long plane = static_cast<long long>(g.nx) * g.ny;
  return static_cast<int>(std::clamp<long long>(kSlabVoxels / plane, 1, g.nz));
}

MeshSlab mesh_slab(const VolumeGrid& g, int k0, int slices) {
  MeshSlab s{};
  s.k0 = k0;
  s.k1 = static_cast<int>(std::min<long long>(static_cast<long long>(k0) + slices, g.nz));
  s.case_first = std::max(k0 - 1, 0);
  s.end = std::min(s.k1 + 1, g.nz);
  return s;
}

void check_mesh_size(long long vertices, long long triangles) {
  S3D_EXPECTS(vertices < (1LL << 31) && triangles < (1LL << 31) / 3, "extract_mesh: the mesh exceeds 2^31 entries");
}

}  // namespace s3d::fusion::detail
