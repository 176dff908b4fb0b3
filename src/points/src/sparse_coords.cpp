// Sparse coordinates from rows and from voxels (rulebook.hpp), and the voxels' kept points (voxels.hpp).
#include <algorithm>
#include <climits>
#include <numeric>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/points/rulebook.hpp"
#include "s3d/points/voxels.hpp"

namespace s3d::points {

SparseCoords coords_from_rows(std::vector<std::int32_t> rows, const std::array<std::int32_t, 3>& shape,
                              int batch_size) {
  S3D_EXPECTS(rows.size() % 4 == 0, "coords_from_rows: " + std::to_string(rows.size()) + " values are not rows of 4");
  const std::size_t m = rows.size() / 4;
  if (m == 0) throw DataError("no voxel coordinates (shape [0, 4])");
  std::int32_t most = 0;
  for (std::size_t r = 0; r < m; ++r) {
    const std::int32_t b = rows[4 * r];
    if (b < 0) throw DataError("row " + std::to_string(r) + ": negative batch id " + std::to_string(b));
    most = std::max(most, b);
  }
  if (most == INT32_MAX) throw DataError("batch id 2^31 - 1 leaves no batch size");
  SparseCoords out;
  out.shape = shape;
  out.batch_size = batch_size > 0 ? batch_size : most + 1;
  out.coords = std::move(rows);
  return out;
}

SparseCoords coords_of(const Voxels& voxels) {
  SparseCoords out;
  for (int a = 0; a < 3; ++a) {
    if (voxels.shape[a] > INT32_MAX)
      throw DataError("the voxel grid has " + std::to_string(voxels.shape[a]) +
                      " cells along an axis (rulebooks take at most 2^31 - 1)");
    out.shape[a] = static_cast<std::int32_t>(voxels.shape[a]);
  }
  out.batch_size = 1;
  out.coords = voxels.coords;
  return out;
}

std::int64_t points_kept(const Voxels& voxels) {
  return std::accumulate(voxels.points_per_voxel.begin(), voxels.points_per_voxel.end(), std::int64_t{0});
}

}  // namespace s3d::points
