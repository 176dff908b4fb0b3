#include "raycast_skipping.hpp"

#include <algorithm>

#include "s3d/core/cpu_dispatch.hpp"

namespace s3d::fusion::detail {
namespace {

/// One line of `n` values at `stride`: each becomes min over |d| < kMaxDistance of max(|d|, value[x + d]),
/// the Chebyshev distance along this axis combined with the distances of the axes done before (exact and
/// separable: max(|dx|, |dy|, |dz|) = max(|dz|, max(|dy|, |dx|))). `line` is scratch for the n inputs.
void chebyshev_line(std::uint8_t* value, std::ptrdiff_t stride, int n, std::uint8_t* line) {
  constexpr int kCap = BrickMap::kMaxDistance;
  for (int x = 0; x < n; ++x) line[x] = value[x * stride];
  for (int x = 0; x < n; ++x) {
    int best = line[x];
    for (int d = 1; d < best && d < kCap; ++d) {
      const int lower = x - d >= 0 ? std::max<int>(d, line[x - d]) : kCap;
      const int upper = x + d < n ? std::max<int>(d, line[x + d]) : kCap;
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

void BrickMap::reset(const VolumeGrid& g) {
  const int longest = std::max(g.nx, std::max(g.ny, g.nz));
  shift_ = 2;
  while (((longest - 1) >> shift_) + 1 > 64) ++shift_;
  bx_ = ((g.nx - 1) >> shift_) + 1;
  by_ = ((g.ny - 1) >> shift_) + 1;
  bz_ = ((g.nz - 1) >> shift_) + 1;
  const std::size_t bricks = static_cast<std::size_t>(bx_) * by_ * bz_;
  marks_.assign(bricks + 3, 0);  // the padding: see marks()
  distance_.assign(bricks, kMaxDistance);
}

void BrickMap::update_distances() {
  std::uint8_t* dist = distance_.data();
  const std::uint8_t* marks = marks_.data();
  const std::ptrdiff_t bricks = static_cast<std::ptrdiff_t>(distance_.size());
  const int bx = bx_, by = by_, bz = bz_;
  const std::ptrdiff_t sx = 1, sy = bx, sz = static_cast<std::ptrdiff_t>(bx) * by;
  const int longest = std::max(bx, std::max(by, bz));
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (std::ptrdiff_t b = 0; b < bricks; ++b) dist[b] = marks[b] ? 0 : kMaxDistance;
    // One axis after the other (each pass reads and writes whole lines; the barriers order the passes).
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

void BrickMap::build(const Voxel* vol, const VolumeGrid& g) {
  reset(g);
#pragma omp parallel for schedule(static)
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j) {
      const Voxel* row = vol + g.index(0, j, k);
      for (int i = 0; i < g.nx; ++i)
        if (row[i].tsdf < 0) mark(i, j, k);
    }
  update_distances();
}

}  // namespace s3d::fusion::detail
