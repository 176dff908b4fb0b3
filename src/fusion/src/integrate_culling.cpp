#include "integrate_culling.hpp"

#include <algorithm>
#include <cmath>

namespace s3d::fusion::detail {
namespace {

// Relative and absolute slack on both sides of the test: float rounding in the kernel is ~1e-7 relative.
constexpr double kRelative = 1e-5, kAbsolute = 1e-6;

}  // namespace

void IntegrateCulling::update(const IntegrateArgs& a, const float* depth, long long pitch) {
  const VolumeGrid& g = a.grid;
  const int w = a.width, h = a.height;
  // Level 0: per tile, the largest D + mu of its pixels with depth > 0 (the others update nothing).
  const int tiles_x = ((w - 1) >> kTileShift) + 1, tiles_y = ((h - 1) >> kTileShift) + 1;
  if (pyramid_.empty() || level_width_[0] != tiles_x || level_height_[0] != tiles_y) {
    pyramid_.clear();
    level_width_.clear();
    level_height_.clear();
    for (int lw = tiles_x, lh = tiles_y;; lw = (lw + 1) / 2, lh = (lh + 1) / 2) {
      pyramid_.emplace_back(static_cast<std::size_t>(lw) * lh);
      level_width_.push_back(lw);
      level_height_.push_back(lh);
      if (lw == 1 && lh == 1) break;
    }
  }
  std::vector<float>& tiles = pyramid_[0];
#pragma omp parallel for schedule(static)
  for (int ty = 0; ty < tiles_y; ++ty)
    for (int tx = 0; tx < tiles_x; ++tx) {
      double bound = 0.0;
      for (int v = ty << kTileShift; v < std::min(h, (ty + 1) << kTileShift); ++v) {
        const double yn = (v - static_cast<double>(a.cy)) / a.fy;
        for (int u = tx << kTileShift; u < std::min(w, (tx + 1) << kTileShift); ++u) {
          const double d = depth[v * pitch + u];
          if (!(d > 0.0)) continue;
          const double xn = (u - static_cast<double>(a.cx)) / a.fx;
          const double mu = std::min(g.truncation + g.truncation_growth * d, static_cast<double>(g.truncation_cap));
          const double reach = d * std::sqrt(xn * xn + yn * yn + 1.0) + (mu == mu ? mu : g.truncation_cap);
          bound = std::max(bound, reach * (1.0 + kRelative) + kAbsolute);
        }
      }
      bound *= 1.0 + kRelative;  // and a float that holds it (beyond the float range: +inf)
      tiles[static_cast<std::size_t>(ty) * tiles_x + tx] = bound < 3.0e38 ? static_cast<float>(bound) : INFINITY;
    }
  for (std::size_t l = 1; l < pyramid_.size(); ++l) {
    const std::vector<float>& below = pyramid_[l - 1];
    const int bw = level_width_[l - 1], bh = level_height_[l - 1];
    for (int y = 0; y < level_height_[l]; ++y)
      for (int x = 0; x < level_width_[l]; ++x) {
        float m = 0.0f;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx)
            if (2 * x + dx < bw && 2 * y + dy < bh) m = std::max(m, below[(2 * y + dy) * bw + 2 * x + dx]);
        pyramid_[l][static_cast<std::size_t>(y) * level_width_[l] + x] = m;
      }
  }
  // The blocks.
  blocks_x_ = ((g.nx - 1) >> kBlockShift) + 1;
  blocks_y_ = ((g.ny - 1) >> kBlockShift) + 1;
  blocks_z_ = ((g.nz - 1) >> kBlockShift) + 1;
  culled_.resize(static_cast<std::size_t>(blocks_x_) * blocks_y_ * blocks_z_);
  const double origin[3] = {g.origin.x, g.origin.y, g.origin.z}, voxel[3] = {g.voxel.x, g.voxel.y, g.voxel.z};
  const double centre[3] = {a.camera_centre.x, a.camera_centre.y, a.camera_centre.z};
  const int n[3] = {g.nx, g.ny, g.nz};
  const Rigid& m = a.world_to_camera;
#pragma omp parallel for collapse(2) schedule(static)
  for (int bz = 0; bz < blocks_z_; ++bz)
    for (int by = 0; by < blocks_y_; ++by)
      for (int bx = 0; bx < blocks_x_; ++bx) {
        const int b[3] = {bx, by, bz};
        double lo[3], hi[3], gap2 = 0.0;  // the box of the block's voxel centres; its squared distance
        for (int axis = 0; axis < 3; ++axis) {
          const int first = b[axis] << kBlockShift, last = std::min(first + (1 << kBlockShift), n[axis]) - 1;
          lo[axis] = origin[axis] + (first + 0.5) * voxel[axis];
          hi[axis] = origin[axis] + (last + 0.5) * voxel[axis];
          const double gap = std::max({lo[axis] - centre[axis], 0.0, centre[axis] - hi[axis]});
          gap2 += gap * gap;
        }
        double u_min = INFINITY, u_max = -INFINITY, v_min = INFINITY, v_max = -INFINITY;
        bool in_front = true;
        for (int corner = 0; corner < 8 && in_front; ++corner) {
          const double p[3] = {corner & 1 ? hi[0] : lo[0], corner & 2 ? hi[1] : lo[1], corner & 4 ? hi[2] : lo[2]};
          double c[3];
          for (int r = 0; r < 3; ++r) c[r] = m.r[3 * r] * p[0] + m.r[3 * r + 1] * p[1] + m.r[3 * r + 2] * p[2] + m.t[r];
          in_front = c[2] > 1e-6;
          const double u = a.fx * c[0] / c[2] + a.cx, v = a.fy * c[1] / c[2] + a.cy;
          u_min = std::min(u_min, u);
          u_max = std::max(u_max, u);
          v_min = std::min(v_min, v);
          v_max = std::max(v_max, v);
        }
        bool culled = false;
        if (in_front) {
          // The pixels the voxels can round to, widened by one.
          const double u0 = std::max(std::floor(u_min) - 1.0, 0.0), u1 = std::min(std::ceil(u_max) + 1.0, w - 1.0);
          const double v0 = std::max(std::floor(v_min) - 1.0, 0.0), v1 = std::min(std::ceil(v_max) + 1.0, h - 1.0);
          culled = !(u0 <= u1 && v0 <= v1) || std::sqrt(gap2) * (1.0 - kRelative) - kAbsolute >
                                                  tile_bound(static_cast<int>(u0), static_cast<int>(u1),
                                                             static_cast<int>(v0), static_cast<int>(v1));
        }
        culled_[(static_cast<std::size_t>(bz) * blocks_y_ + by) * blocks_x_ + bx] = culled;
      }
}

float IntegrateCulling::tile_bound(int u0, int u1, int v0, int v1) const {
  int x0 = u0 >> kTileShift, x1 = u1 >> kTileShift, y0 = v0 >> kTileShift, y1 = v1 >> kTileShift;
  std::size_t level = 0;
  // Up the pyramid until the range spans at most 2 x 2 cells: those cover it.
  while (level + 1 < pyramid_.size() && (x1 - x0 > 1 || y1 - y0 > 1)) {
    x0 >>= 1, x1 >>= 1, y0 >>= 1, y1 >>= 1;
    ++level;
  }
  const std::vector<float>& cells = pyramid_[level];
  const int lw = level_width_[level];
  float bound = 0.0f;
  for (int y = y0; y <= y1; ++y)
    for (int x = x0; x <= x1; ++x) bound = std::max(bound, cells[static_cast<std::size_t>(y) * lw + x]);
  return bound;
}

}  // namespace s3d::fusion::detail
