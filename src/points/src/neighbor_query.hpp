#pragma once
// One query's exact search over the grid (kNN or ball query) and the finishing of its output row; shared by
// both backends so that they agree bit for bit.
#include <cmath>
#include <cstdint>

#include "grid_math.hpp"

namespace s3d::points::detail {

/// Everything a search needs besides the grid and the query; a trivially copyable kernel argument.
struct QuerySpec {
  int k;
  bool ball;          // ball query (else kNN)
  bool by_index;      // ball query: first K in index order (else by distance)
  bool exclude_self;  // kNN on the cloud itself: query i skips point i
  bool pad_first;     // fill missing slots with the first neighbour (else -1 / +inf)
  float radius2;      // ball: d2 < radius2
  float min_radius2;  // ball: and (d2 == 0 or d2 >= min_radius2) when > 0 (mmcv)
};

/// Searches for one query (`self` = the query's own point index, or -1); returns how many it found (<= k).
template <typename Row>
S3D_HOST_DEVICE inline int search_query(const GridView& g, const QuerySpec& spec, float qx, float qy, float qz,
                                        std::int32_t self, Row& row) {
  long long found = 0;
  if (spec.ball) {
    auto visit = [&](float d2, std::int32_t idx) {
      // In index order a full row takes no larger index, and the cell's later points all have larger ones.
      if (spec.by_index && found >= row.k() && idx > row.worst_index()) return false;
      if (!(d2 < spec.radius2)) return true;
      if (spec.min_radius2 > 0.f && !(d2 == 0.f || d2 >= spec.min_radius2)) return true;
      ++found;
      const float key = spec.by_index ? 0.f : d2;
      if (row.accepts(key, idx)) row.insert(key, d2, idx);
      return true;
    };
    visit_box(g, qx, qy, qz, sqrtf(spec.radius2), visit);
  } else {
    auto visit = [&](float d2, std::int32_t idx) {
      if (idx == self) return true;
      ++found;
      if (row.accepts(d2, idx)) row.insert(d2, d2, idx);
      return true;
    };
    auto run = [&](int x0, int x1, int y, int z) { visit_cells(g, x0, x1, y, z, qx, qy, qz, visit); };
    auto done = [&](float bound2) { return row.worst_key() < bound2; };
    visit_shells(g, qx, qy, qz, run, done);
  }
  return found < row.k() ? static_cast<int>(found) : row.k();
}

/// Writes the final row: distances as sqrt(d2), missing slots padded. KM > 0: the row has at most KM slots and
/// the loop is unrolled (RegisterRow needs constant indices); KM == 0: row.k() slots.
template <int KM, typename Row>
S3D_HOST_DEVICE inline void finish_row(const QuerySpec& spec, const Row& row, int count, std::int32_t* idx_out,
                                       float* dist_out) {
  const float inf = __builtin_huge_valf();
  const int k = row.k();
  const int slots = KM > 0 ? KM : k;
#pragma unroll
  for (int j = 0; j < slots; ++j) {
    if (KM > 0 && j >= k) continue;
    std::int32_t i = -1;
    float d = inf;
    if (j < count) {
      i = row.index_at(j);
      d = sqrtf(row.d2_at(j));
    } else if (spec.pad_first && count > 0) {
      i = row.index_at(0);
      d = sqrtf(row.d2_at(0));
    }
    if (idx_out) idx_out[j] = i;
    if (dist_out) dist_out[j] = d;
  }
}

}  // namespace s3d::points::detail
