#pragma once
// Internal, CPU backend: the blocks of the dense grid that a frame's integration cannot change, found before the
// sweep so that it passes over them.
//
// A voxel is updated only where sdf = D - |p - camera| >= -mu, D being the ray depth of the pixel it projects to
// (depth * sqrt(xn^2 + yn^2 + 1)) and mu that pixel's truncation. So a block of voxels whose nearest point lies
// farther from the camera than D + mu of every pixel its voxels can project to is behind the surface everywhere:
// none of its voxels is updated. The bound on D + mu comes from a max pyramid of 8x8-pixel tiles; the pixels a
// block can reach from the projection of its corners (all in front of the camera), widened by a pixel; both
// sides of the test carry relative margins far above float rounding, so a culled block is one the plain loop
// would leave unchanged, and the volume stays the same bit for bit. Blocks that reach no pixel of the image are
// culled too (their voxels project outside it).
#include <cstdint>
#include <vector>

#include "tsdf_math.hpp"

namespace s3d::fusion::detail {

class IntegrateCulling {
 public:
  static constexpr int kBlockShift = 4;  ///< blocks of 16^3 voxels
  static constexpr int kTileShift = 3;   ///< tiles of 8x8 pixels

  /// Marks the blocks of a.grid that integrating `depth` (pitch in floats) cannot change. OpenMP.
  void update(const IntegrateArgs& a, const float* depth, long long pitch);
  /// Whether voxel (i, j, k)'s block is culled (after update()).
  bool culled(int i, int j, int k) const {
    return culled_[(static_cast<std::size_t>(k >> kBlockShift) * blocks_y_ + (j >> kBlockShift)) * blocks_x_ +
                   (i >> kBlockShift)] != 0;
  }

 private:
  float tile_bound(int u0, int u1, int v0, int v1) const;

  int blocks_x_ = 0, blocks_y_ = 0, blocks_z_ = 0;
  std::vector<std::uint8_t> culled_;
  std::vector<std::vector<float>> pyramid_;  ///< level 0: per tile the largest D + mu (0 where no depth)
  std::vector<int> level_width_, level_height_;
};

}  // namespace s3d::fusion::detail
