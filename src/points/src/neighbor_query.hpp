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

S3D_HOST_DEVICE inline void clear_row(const RowRef& row) {
  for (int j = 0; j < row.k; ++j) {
    row.key[j] = __builtin_huge_valf();  // +inf
    row.d2[j] = row.key[j];
    row.idx[j] = 0x7fffffff;
  }
}

/// Searches for one query (`self` = the query's own point index, or -1); returns how many it found (<= k).
S3D_HOST_DEVICE inline int search_query(const GridView& g, const QuerySpec& spec, float qx, float qy, float qz,
                                        std::int32_t self, const RowRef& row) {
  clear_row(row);
  long long found = 0;
  if (spec.ball) {
    auto visit = [&](float d2, std::int32_t idx) {
      if (!(d2 < spec.radius2)) return;
      if (spec.min_radius2 > 0.f && !(d2 == 0.f || d2 >= spec.min_radius2)) return;
      ++found;
      const float key = spec.by_index ? 0.f : d2;
      if (row_accepts(row, key, idx)) row_insert(row, key, d2, idx);
    };
    visit_box(g, qx, qy, qz, sqrtf(spec.radius2), visit);
  } else {
    auto visit = [&](float d2, std::int32_t idx) {
      if (idx == self) return;
      ++found;
      if (row_accepts(row, d2, idx)) row_insert(row, d2, d2, idx);
    };
    auto done = [&](float bound2) { return row.key[row.k - 1] < bound2; };
    visit_shells(g, qx, qy, qz, visit, done);
  }
  return found < row.k ? static_cast<int>(found) : row.k;
}

/// Writes the final row: distances as sqrt(d2), missing slots padded.
S3D_HOST_DEVICE inline void finish_row(const QuerySpec& spec, const RowRef& row, int count, std::int32_t* idx_out,
                                       float* dist_out) {
  const float inf = __builtin_huge_valf();
  for (int j = 0; j < row.k; ++j) {
    std::int32_t i = -1;
    float d = inf;
    if (j < count) {
      i = row.idx[j];
      d = sqrtf(row.d2[j]);
    } else if (spec.pad_first && count > 0) {
      i = row.idx[0];
      d = sqrtf(row.d2[0]);
    }
    if (idx_out) idx_out[j] = i;
    if (dist_out) dist_out[j] = d;
  }
}

}  // namespace s3d::points::detail
