#pragma once
// The uniform grid both neighbour backends sort points into, and the exact searches over it (S3D_HOST_DEVICE,
// shared by neighbors_cpu.cpp and neighbors_cuda.cu). The grid's shape only decides how much work a search
// does, never its answer: every search visits cells until no unvisited point can change the result, with a
// margin that covers the rounding of the cell assignment.
#include <cmath>
#include <cstdint>

#include "point_math.hpp"
#include "s3d/core/host_device.hpp"

namespace s3d::points::detail {

struct GridShape {
  float origin[3];  // bounding-box minimum
  float cell;       // cell edge
  float inv_cell;
  float margin;  // how far a point may sit outside its cell's box after rounding
  int dims[3];
  S3D_HOST_DEVICE long long cells() const { return static_cast<long long>(dims[0]) * dims[1] * dims[2]; }
};

S3D_HOST_DEVICE inline float grid_max(float a, float b) { return a > b ? a : b; }
S3D_HOST_DEVICE inline float grid_abs(float a) { return a < 0 ? -a : a; }

/// A grid over the box [lo, hi] for `n` points: about `points_per_cell` points per cell, cells no smaller than
/// `min_cell`, at most `max_cells` cells.
S3D_HOST_DEVICE inline GridShape make_grid_shape(const float lo[3], const float hi[3], long long n,
                                                 float points_per_cell, float min_cell, long long max_cells) {
  GridShape g{};
  float extent[3], largest = 0.f, magnitude = 0.f;
  for (int a = 0; a < 3; ++a) {
    g.origin[a] = lo[a];
    extent[a] = hi[a] - lo[a];
    largest = grid_max(largest, extent[a]);
    magnitude = grid_max(magnitude, grid_max(grid_abs(lo[a]), grid_abs(hi[a])));
  }
  double wanted = static_cast<double>(n) / points_per_cell;
  if (wanted < 1) wanted = 1;
  if (wanted > static_cast<double>(max_cells)) wanted = static_cast<double>(max_cells);
  double volume = 1;
  for (int a = 0; a < 3; ++a) volume *= grid_max(extent[a], largest * 1e-3f);
  float cell = largest > 0 ? static_cast<float>(cbrt(volume / wanted)) : 1.f;
  cell = grid_max(grid_max(cell, min_cell), grid_max(largest * 1e-6f, magnitude * 1e-6f));
  if (!(cell > 0)) cell = 1.f;
  for (;;) {
    long long total = 1;
    for (int a = 0; a < 3; ++a) {
      const float cells = extent[a] / cell;
      g.dims[a] = cells >= float(1 << 20) ? (1 << 20) : static_cast<int>(cells) + 1;
      total *= g.dims[a];
    }
    if (total <= max_cells) break;
    cell *= 1.25f;
  }
  g.cell = cell;
  g.inv_cell = 1.f / cell;
  g.margin = cell * 1e-3f + (magnitude + largest) * 1e-6f;
  return g;
}

S3D_HOST_DEVICE inline int grid_coordinate(const GridShape& g, float v, int axis) {
  float c = (v - g.origin[axis]) * g.inv_cell;
  const float top = static_cast<float>(g.dims[axis] - 1);
  c = c < 0.f ? 0.f : (c > top ? top : c);
  return static_cast<int>(c);
}

S3D_HOST_DEVICE inline long long grid_cell(const GridShape& g, int x, int y, int z) {
  return (static_cast<long long>(z) * g.dims[1] + y) * g.dims[0] + x;
}

/// Sorted points: cell c holds sorted positions [begin[c], begin[c + 1]); `xyz` has 4 floats per sorted point
/// and `index` its original index.
struct GridView {
  GridShape shape;
  const std::int32_t* begin;
  const float* xyz;
  const std::int32_t* index;
};

/// A query's best K so far, sorted by (key, index); empty slots hold key +inf, index INT32_MAX. The key is the
/// squared distance (kNN, ball query by distance) or 0 (ball query in index order). Two storages with one
/// interface: PointerRow (arrays elsewhere: the CPU, and CUDA for K > 32) and RegisterRow (CUDA, K <= KM:
/// every index is a compile-time constant, so the row stays in registers).
class PointerRow {
 public:
  S3D_HOST_DEVICE PointerRow(float* key, float* d2, std::int32_t* idx, int k) : key_(key), d2_(d2), idx_(idx), k_(k) {
    for (int j = 0; j < k_; ++j) {
      key_[j] = d2_[j] = __builtin_huge_valf();
      idx_[j] = 0x7fffffff;
    }
  }
  S3D_HOST_DEVICE int k() const { return k_; }
  S3D_HOST_DEVICE float worst_key() const { return key_[k_ - 1]; }
  S3D_HOST_DEVICE std::int32_t worst_index() const { return idx_[k_ - 1]; }
  S3D_HOST_DEVICE bool accepts(float key, std::int32_t idx) const {
    return neighbor_before(key, idx, key_[k_ - 1], idx_[k_ - 1]);
  }
  /// A candidate that `accepts` passed bubbles into place; the last slot falls off.
  S3D_HOST_DEVICE void insert(float key, float d2, std::int32_t idx) {
    for (int j = 0; j < k_; ++j) {
      if (neighbor_before(key, idx, key_[j], idx_[j])) {
        const float tk = key_[j], td = d2_[j];
        const std::int32_t ti = idx_[j];
        key_[j] = key, d2_[j] = d2, idx_[j] = idx;
        key = tk, d2 = td, idx = ti;
      }
    }
  }
  S3D_HOST_DEVICE std::int32_t index_at(int j) const { return idx_[j]; }
  S3D_HOST_DEVICE float d2_at(int j) const { return d2_[j]; }

 private:
  float* key_;
  float* d2_;
  std::int32_t* idx_;
  int k_;
};

template <int KM>
class RegisterRow {
 public:
  S3D_HOST_DEVICE explicit RegisterRow(int k) : k_(k) {
#pragma unroll
    for (int j = 0; j < KM; ++j) {
      key_[j] = d2_[j] = __builtin_huge_valf();
      idx_[j] = 0x7fffffff;
    }
  }
  S3D_HOST_DEVICE int k() const { return k_; }
  S3D_HOST_DEVICE float worst_key() const { return worst_key_; }
  S3D_HOST_DEVICE std::int32_t worst_index() const { return worst_idx_; }
  S3D_HOST_DEVICE bool accepts(float key, std::int32_t idx) const {
    return neighbor_before(key, idx, worst_key_, worst_idx_);
  }
  S3D_HOST_DEVICE void insert(float key, float d2, std::int32_t idx) {
#pragma unroll
    for (int j = 0; j < KM; ++j) {
      if (j < k_ && neighbor_before(key, idx, key_[j], idx_[j])) {
        const float tk = key_[j], td = d2_[j];
        const std::int32_t ti = idx_[j];
        key_[j] = key, d2_[j] = d2, idx_[j] = idx;
        key = tk, d2 = td, idx = ti;
      }
    }
#pragma unroll
    for (int j = 0; j < KM; ++j)
      if (j == k_ - 1) worst_key_ = key_[j], worst_idx_ = idx_[j];
  }
  /// Unrolled by the caller (finish_row) so that j is a constant.
  S3D_HOST_DEVICE std::int32_t index_at(int j) const { return idx_[j]; }
  S3D_HOST_DEVICE float d2_at(int j) const { return d2_[j]; }

 private:
  float key_[KM], d2_[KM];
  std::int32_t idx_[KM];
  int k_;
  float worst_key_ = __builtin_huge_valf();
  std::int32_t worst_idx_ = 0x7fffffff;
};

/// Visits the points of cell (x, y, z) in index order (cells list their points that way), offering each to
/// `visit(d2, index)`; a visit that returns false skips the rest of the cell.
template <typename Visit>
S3D_HOST_DEVICE inline void visit_cell(const GridView& g, int x, int y, int z, float qx, float qy, float qz,
                                       Visit& visit) {
  const long long c = grid_cell(g.shape, x, y, z);
  const std::int32_t end = g.begin[c + 1];
  for (std::int32_t p = g.begin[c]; p < end; ++p) {
    const float* v = g.xyz + 4 * static_cast<long long>(p);
    if (!visit(squared_distance(v[0], v[1], v[2], qx, qy, qz), g.index[p])) return;
  }
}

/// Cells x0..x1 of row (y, z), each visit_cell in x order.
template <typename Visit>
S3D_HOST_DEVICE inline void visit_cells(const GridView& g, int x0, int x1, int y, int z, float qx, float qy, float qz,
                                        Visit& visit) {
  for (int x = x0; x <= x1; ++x) visit_cell(g, x, y, z, qx, qy, qz, visit);
}

/// Visits shells of cells around q (Chebyshev distance 0, 1, ...) until `done(bound2)` says that no point at
/// squared distance >= bound2 can matter, or the grid is exhausted. bound2 < 0 means "no bound yet". The cells
/// go to `visit_run(x0, x1, y, z)`: cells x0..x1 of row (y, z), to be visited in x order (a row's cells are
/// contiguous in the sorted points); visit_cells is the plain one.
template <typename VisitRun, typename Done>
S3D_HOST_DEVICE inline void visit_shells(const GridView& g, float qx, float qy, float qz, VisitRun& visit_run,
                                         Done& done) {
  const GridShape& s = g.shape;
  const float q[3] = {qx, qy, qz};
  const int c[3] = {grid_coordinate(s, qx, 0), grid_coordinate(s, qy, 1), grid_coordinate(s, qz, 2)};
  for (int r = 0;; ++r) {
    int lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      lo[a] = c[a] - r < 0 ? 0 : c[a] - r;
      hi[a] = c[a] + r > s.dims[a] - 1 ? s.dims[a] - 1 : c[a] + r;
    }
    for (int z = lo[2]; z <= hi[2]; ++z) {
      for (int y = lo[1]; y <= hi[1]; ++y) {
        const bool face = z == c[2] - r || z == c[2] + r || y == c[1] - r || y == c[1] + r;
        if (face) {
          visit_run(lo[0], hi[0], y, z);
        } else {
          if (c[0] - r >= 0) visit_run(c[0] - r, c[0] - r, y, z);
          if (r > 0 && c[0] + r <= s.dims[0] - 1) visit_run(c[0] + r, c[0] + r, y, z);
        }
      }
    }
    // The nearest an unvisited point can be: the distance to the nearest face of the visited box that is not
    // on the grid's edge, less the margin.
    bool everything = true;
    float bound = 3.4e38f;
    for (int a = 0; a < 3; ++a) {
      if (c[a] - r > 0) {
        everything = false;
        const float face = s.origin[a] + static_cast<float>(c[a] - r) * s.cell;
        bound = bound < q[a] - face ? bound : q[a] - face;
      }
      if (c[a] + r < s.dims[a] - 1) {
        everything = false;
        const float face = s.origin[a] + static_cast<float>(c[a] + r + 1) * s.cell;
        bound = bound < face - q[a] ? bound : face - q[a];
      }
    }
    if (everything) return;
    bound -= s.margin;
    if (bound > 0.f && done(bound * bound)) return;
  }
}

/// Visits every cell that overlaps the cube of half-edge `radius` (+ margin) around q.
template <typename Visit>
S3D_HOST_DEVICE inline void visit_box(const GridView& g, float qx, float qy, float qz, float radius, Visit& visit) {
  const GridShape& s = g.shape;
  const float reach = radius + s.margin;
  const int x0 = grid_coordinate(s, qx - reach, 0), x1 = grid_coordinate(s, qx + reach, 0);
  const int y0 = grid_coordinate(s, qy - reach, 1), y1 = grid_coordinate(s, qy + reach, 1);
  const int z0 = grid_coordinate(s, qz - reach, 2), z1 = grid_coordinate(s, qz + reach, 2);
  for (int z = z0; z <= z1; ++z)
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) visit_cell(g, x, y, z, qx, qy, qz, visit);
}

}  // namespace s3d::points::detail
