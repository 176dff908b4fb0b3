// Host set-up shared by both sparse volume backends (see sparse_volume.hpp).
#include <algorithm>
#include <cmath>

#include "s3d/core/errors.hpp"
#include "sparse_volume.hpp"

namespace s3d::fusion::detail {

long long sparse_block_capacity(const VolumeParams& p) {
  return std::min<long long>(p.sparse_memory_bytes / sparse_block_bytes(p.color), 1LL << 24);
}

unsigned int sparse_hash_entries(long long blocks) {
  unsigned int entries = 2;
  while (static_cast<long long>(entries) < 2 * blocks) entries *= 2;
  return entries;
}

void validate_sparse_volume(const VolumeParams& p) {
  S3D_EXPECTS(std::isfinite(p.truncation) && p.truncation > 0.0f, "volume: truncation must be finite and > 0");
  S3D_EXPECTS(p.max_weight >= 1 && p.max_weight <= 32767, "volume: max_weight must be in [1, 32767]");
  S3D_EXPECTS(std::isfinite(p.sparse_voxel_size) && p.sparse_voxel_size >= 1e-4f && p.sparse_voxel_size <= 1.0f,
              "volume: sparse_voxel_size must be in [1e-4, 1] metres");
  S3D_EXPECTS(p.sparse_memory_bytes >= sparse_block_bytes(p.color) && p.sparse_memory_bytes <= (1LL << 40),
              "volume: sparse_memory_bytes must hold at least one block and be at most 2^40");
  S3D_EXPECTS(std::isfinite(p.sparse_raycast_range) && p.sparse_raycast_range > 0.0f &&
                  p.sparse_raycast_range <= 1e4f &&
                  static_cast<double>(p.sparse_raycast_range) <= 1e6 * static_cast<double>(p.truncation),
              "volume: sparse_raycast_range must be in (0, 10^4] metres and at most 10^6 truncations");
}

namespace {

/// The fields AllocateArgs and SparseRaycastArgs share: the grid, the pose, the intrinsics, the image size.
template <typename Args>
Args camera_args(const SparseGrid& g, const CameraIntrinsics& camera, const Rigid& camera_to_world, int width,
                 int height) {
  Args a{};
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

}  // namespace

AllocateArgs make_allocate_args(const SparseGrid& g, ImageView<const float> depth, const CameraIntrinsics& camera,
                                const Rigid& camera_to_world) {
  AllocateArgs a = camera_args<AllocateArgs>(g, camera, camera_to_world, depth.width, depth.height);
  a.max_blocks = segment_block_limit(g);
  return a;
}

SparseRaycastArgs make_sparse_raycast_args(const SparseGrid& g, const VolumeParams& p, const CameraIntrinsics& camera,
                                           const Rigid& camera_to_world, int width, int height,
                                           const BlockBounds& bounds) {
  SparseRaycastArgs a = camera_args<SparseRaycastArgs>(g, camera, camera_to_world, width, height);
  a.range = p.sparse_raycast_range;
  a.world_to_camera = inverse_rigid(camera_to_world);
  a.tile_cols = (width + kStartTile - 1) / kStartTile;
  a.tile_rows = (height + kStartTile - 1) / kStartTile;
  for (int axis = 0; axis < 3; ++axis) {
    a.box_lo[axis] = bounds.empty() ? 1.0f : static_cast<float>((bounds.lo[axis] - 1) * kBlockSide) * g.voxel;
    a.box_hi[axis] = bounds.empty() ? 0.0f : static_cast<float>((bounds.hi[axis] + 2) * kBlockSide) * g.voxel;
  }
  return a;
}

std::vector<BlockCoord> sorted_blocks(std::vector<unsigned long long> keys) {
  std::sort(keys.begin(), keys.end());
  std::vector<BlockCoord> out(keys.size());
  for (std::size_t b = 0; b < keys.size(); ++b) out[b] = unpack_block(keys[b]);
  return out;
}

BlockCoord camera_block(const SparseGrid& g, const Rigid& camera_to_world) {
  int b[3];
  for (int axis = 0; axis < 3; ++axis) {
    const double f = std::floor(static_cast<double>(camera_to_world.t[axis]) / static_cast<double>(g.block));
    b[axis] = static_cast<int>(std::clamp(f, -static_cast<double>(kBlockCoordLimit), kBlockCoordLimit - 1.0));
  }
  return {b[0], b[1], b[2]};
}

}  // namespace s3d::fusion::detail
