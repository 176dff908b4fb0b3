#pragma once
// Point clouds with every attribute carried through the kernels' answers (Open3D's
// t::geometry::PointCloud::SelectByIndex / VoxelDownSample semantics; docs/PC-SAMPLE.md, "Faces and other
// elements"): rows selected in a given order, voxels aggregating every column, attributes interpolated by
// three-NN. What becomes of non-point elements: a `face` (or `edge`) element keeps the items whose vertices all
// survive, renumbered; another element that refers to vertices (a `range_grid`) cannot survive a subset and is
// dropped; an element that refers to no vertex is kept as it was.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "s3d/core/point_cloud.hpp"
#include "s3d/points/neighbors.hpp"
#include "s3d/points/voxels.hpp"

namespace s3d::points {

// ---- Coordinates. A file may store x, y, z as doubles (the cloud keeps those columns beside its float
// positions): these functions read them, so that far-from-origin clouds keep their precision
// (docs/PC-SAMPLE.md, "Coordinates").

/// A point with a coordinate that is not finite: NaN, an infinity, or a double beyond float's range.
struct NonFinitePoint {
  std::size_t row = 0;
  int axis = 0;        ///< 0, 1, 2 = x, y, z
  double value = 0.0;  ///< as stored (the double column when there is one)
};
/// The first such point in row and axis order, or none.
std::optional<NonFinitePoint> first_non_finite(const PointCloud& cloud);
/// The rows whose three coordinates are finite, ascending.
std::vector<std::int64_t> finite_rows(const PointCloud& cloud);

/// The centre of the bounding box of the coordinates, (lo + hi) / 2 in double: shifting a cloud by s moves the
/// centre by s exactly when the sums are exact, so positions relative to it do not change.
std::array<double, 3> bbox_centre(const PointCloud& cloud);
/// The positions minus `origin`, each coordinate computed in double and rounded once to float.
std::vector<float> local_positions(const PointCloud& cloud, const std::array<double, 3>& origin);

// ---- Rows of the file. A cloud whose non-finite points were dropped computes on fewer rows than its file has;
// `rows` (finite_rows of the file's cloud, ascending) maps them back, and an empty `rows` is the identity.
// The tools' outputs name rows of the file.

/// `indices` (rows of the computed cloud; negative = none, kept) rewritten as rows of the file.
void to_file_rows(std::vector<std::int32_t>& indices, const std::vector<std::int64_t>& rows);
/// A per-point value laid over the file's `file_rows` rows: out[rows[i]] = values[i], `fill` where the file's
/// row has no point. @throws InvalidArgument when a row lies outside the file.
std::vector<std::int32_t> spread_to_file_rows(const std::vector<std::int32_t>& values,
                                              const std::vector<std::int64_t>& rows, std::size_t file_rows,
                                              std::int32_t fill);
/// The computed cloud's row of the file's row `file_row`, or none where it was dropped.
std::optional<std::int64_t> computed_row(std::int64_t file_row, const std::vector<std::int64_t>& rows);
/// The positions (x y z of a [N, 3] array) of `rows`, in that order. @throws InvalidArgument for a row outside.
std::vector<float> gather_positions(const std::vector<float>& xyz, const std::vector<std::int32_t>& rows);

/// What a cloud operation did to the non-point elements (reported in the tools' records).
struct ElementChanges {
  std::size_t faces_dropped = 0;              ///< face/edge items that referred to a point left out
  std::vector<std::string> elements_dropped;  ///< whole elements dropped
};

/// Points `rows` of `in` (each in [0, in.size()), repeats allowed), in that order, every attribute column and
/// list following its point. `drop_elements`: drop every non-point element. The result is unorganised (width =
/// height = 0). @throws InvalidArgument for a row outside the cloud.
PointCloud select_rows(const PointCloud& in, const std::vector<std::int64_t>& rows, bool drop_elements,
                       ElementChanges& changes);

/// Every non-point element removed; their names go to `changes`.
void drop_elements(PointCloud& cloud, ElementChanges& changes);

/// One point per voxel of `voxels` (computed on `in`'s positions): the representative's row, with every fixed
/// column aggregated as the positions are (kMean: the fp64 mean of the kept points, integer columns rounded to
/// the nearest; kFirst and kNearestCenter: the representative's values). Lists cannot be averaged and stay the
/// representative's; every other element is dropped. @throws InvalidArgument when `voxels` is not `in`'s.
PointCloud voxel_downsample(const PointCloud& in, const Voxels& voxels, VoxelAggregate aggregate,
                            ElementChanges& changes);

/// The voxels as a feature matrix [M, 3 + C] of float32: the aggregated x, y, z, then every fixed
/// non-coordinate column's components in column order (named `name` or `name[k]`).
struct VoxelFeatures {
  std::vector<std::string> names;
  std::vector<float> values;  ///< row-major [M, names.size()]
};
VoxelFeatures voxel_features(const PointCloud& in, const Voxels& voxels, VoxelAggregate aggregate);

/// The fixed, non-coordinate columns of `sparse` that `dense` lacks: what interpolation adds by default.
std::vector<std::string> missing_columns(const PointCloud& sparse, const PointCloud& dense);

/// Adds (or overwrites) the columns `names` of `sparse` on `dense`, interpolated by `weights` (three_nn of the
/// dense points among the sparse ones). Integer columns get the nearest integer (a convex combination stays
/// in the type's range). @throws InvalidArgument (an unknown or list column, weights of another cloud),
/// DataError (dense already has the column with another shape).
void interpolate_columns(PointCloud& dense, const PointCloud& sparse, const std::vector<std::string>& names,
                         const Interpolation& weights);

}  // namespace s3d::points
