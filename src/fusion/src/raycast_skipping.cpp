#include "raycast_skipping.hpp"

#include <algorithm>

#include "s3d/core/cpu_dispatch.hpp"

namespace s3d::fusion::detail {
namespace {

/// One line of `n` values at `stride`: each becomes min over |d| < kMaxDistance of max(|d|, value[x + d]),
/// the Chebyshev distance along this axis combined with the distances of the axes done before (exact and
/// separable: max(|dx|, |dy|, |dz|) = max(|dz|, max(|dy|, |dx|))). `line` is scratch for the n inputs.
void chebyshev_line(std::uint8_t* value, std::ptrdiff_t stride, int n, std::uint8_t* line) {
  constexpr int cap = BrickMap::kMaxDistance;
  for (int x = 0; x < n; ++x) line[x] = value[x * stride];
  for (int x = 0; x < n; ++x) {
    int best = line[x];
    for (int d = 1; d < best && d < cap; ++d) {
      const int lower = x - d >= 0 ? std::max<int>(d, line[x - d]) : cap;
      const int upper = x + d < n ? std::max<int>(d, line[x + d]) : cap;
      best = std::min(best, std::min(lower, upper));
    }
    value[x * stride] = static_cast<std::uint8_t>(best);
  }
}

S3D_ALWAYS_INLINE void raycast_row_body(const Voxel* vol, const BrickMap& bricks, const RaycastArgs& a, int y,
                                        Vec3f* vertices, Vec3f* normals) {
  for (int x = 0; x < a.width; ++x) raycast_pixel_skipping(vol, bricks, a, x, y, vertices[x], normals[x]);
}

void raycast_row_baseline(const Voxel* vol, const BrickMap& bricks, const RaycastArgs& a, int y, Vec3f* vertices,
                          Vec3f* normals) {
  raycast_row_body(vol, bricks, a, y, vertices, normals);
}

// floorf is one instruction with SSE4.1 (a call-free bit sequence without), and the march takes one per axis
// per sample. `flatten` inlines every callee (trilinear, ...) so that they are AVX2 code too.
__attribute__((flatten)) S3D_TARGET_AVX2 void raycast_row_avx2(const Voxel* vol, const BrickMap& bricks,
                                                               const RaycastArgs& a, int y, Vec3f* vertices,
                                                               Vec3f* normals) {
  raycast_row_body(vol, bricks, a, y, vertices, normals);
}

}  // namespace

void raycast_skipping_cpu(const Voxel* vol, const BrickMap& bricks, const RaycastArgs& a, Vec3f* vertices,
                          Vec3f* normals) {
  const auto row = cpu_avx2_enabled() ? raycast_row_avx2 : raycast_row_baseline;
#pragma omp parallel for schedule(dynamic, 4)
  for (int y = 0; y < a.height; ++y) {
    const std::size_t first = static_cast<std::size_t>(y) * a.width;
    row(vol, bricks, a, y, vertices + first, normals + first);
  }
}

void BrickMap::build(const Voxel* vol, const VolumeGrid& g) {
  bx_ = (g.nx + kBrickSide - 1) >> kBrickShift;
  by_ = (g.ny + kBrickSide - 1) >> kBrickShift;
  bz_ = (g.nz + kBrickSide - 1) >> kBrickShift;
  distance_.assign(static_cast<std::size_t>(bx_) * by_ * bz_, kMaxDistance);
  std::uint8_t* dist = distance_.data();
  const int bx = bx_, by = by_, bz = bz_;
  // Bricks with a negative voxel get 0; one brick layer per iteration, each writing only its own layer.
#pragma omp parallel for schedule(dynamic, 1)
  for (int bk = 0; bk < bz; ++bk)
    for (int k = bk * kBrickSide; k < g.nz && k < (bk + 1) * kBrickSide; ++k)
      for (int j = 0; j < g.ny; ++j) {
        const Voxel* row = vol + g.index(0, j, k);
        std::uint8_t* flags = dist + (static_cast<std::size_t>(bk) * by + (j >> kBrickShift)) * bx;
        for (int i0 = 0; i0 < g.nx; i0 += kBrickSide) {
          const int i1 = i0 + kBrickSide < g.nx ? i0 + kBrickSide : g.nx;
          unsigned bits = 0;  // the stored tsdfs OR-ed: bit 15 is set when one of them is negative
          for (int i = i0; i < i1; ++i) bits |= static_cast<std::uint16_t>(row[i].tsdf);
          if (bits & 0x8000u) flags[i0 >> kBrickShift] = 0;
        }
      }
  // The distances, one axis after the other.
  const std::ptrdiff_t sx = 1, sy = bx, sz = static_cast<std::ptrdiff_t>(bx) * by;
  const int longest = std::max(bx, std::max(by, bz));
#pragma omp parallel
  {
    std::vector<std::uint8_t> line(static_cast<std::size_t>(longest));
#pragma omp for schedule(static)
    for (int z = 0; z < bz; ++z)
      for (int y = 0; y < by; ++y) chebyshev_line(dist + z * sz + y * sy, sx, bx, line.data());
#pragma omp for schedule(static)
    for (int z = 0; z < bz; ++z)
      for (int x = 0; x < bx; ++x) chebyshev_line(dist + z * sz + x * sx, sy, by, line.data());
#pragma omp for schedule(static)
    for (int y = 0; y < by; ++y)
      for (int x = 0; x < bx; ++x) chebyshev_line(dist + y * sy + x * sx, sz, bz, line.data());
  }
}

}  // namespace s3d::fusion::detail
