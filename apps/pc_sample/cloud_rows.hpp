#pragma once
// A cloud cut down to some of its points, in a given order (FPS keeps its selection order), with every
// attribute column and list following its points, and what becomes of the other elements (docs/PC-SAMPLE.md,
// "Faces and other elements"): a `face` (or `edge`) element keeps the items whose vertices all survive, their
// indices renumbered; any other element that refers to vertices (a `range_grid`) cannot survive a subset and is
// dropped; an element that refers to no vertex is kept as it was.
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/core/point_cloud.hpp"

namespace s3d::pc_sample {

/// What take_rows did to the elements.
struct RowStats {
  std::size_t faces_dropped = 0;              ///< face/edge items that referred to a point left out
  std::vector<std::string> elements_dropped;  ///< whole elements dropped
};

/// Points `rows` of `in` (each in [0, in.size()), repeats allowed), in that order. `drop_elements`: drop
/// every non-point element (--drop-faces). The result is unorganised (width = height = 0).
PointCloud take_rows(const PointCloud& in, const std::vector<std::int64_t>& rows, bool drop_elements, RowStats& stats);

/// Every non-point element removed (--drop-faces on a cloud that keeps all its points); their names go to stats.
void drop_elements(PointCloud& cloud, RowStats& stats);

}  // namespace s3d::pc_sample
