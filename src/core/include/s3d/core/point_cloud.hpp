#pragma once
// A host point cloud that keeps everything a point-cloud file can carry, so that read -> write loses
// nothing: xyz positions (float, contiguous, the layout kernels take through `PointsView`), any number of
// named per-point attribute columns of every PLY scalar type with a fixed component count (PCD `COUNT`),
// variable-length list attributes (PLY `property list`), whole non-vertex elements kept as they were
// (PLY `face`, `range_grid`), and the header facts a writer needs to reproduce the source (comments,
// property order, organised width x height, PCD viewpoint).
//
// Values are stored in host byte order; a column's bytes are `size() * components * scalar_size(type)`.
// No OpenCV, PCL or CUDA here: the readers and writers live in s3d::io (point_cloud_io.hpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "s3d/core/views.hpp"

namespace s3d {

/// The scalar types of PLY (and PCD's I/U/F of sizes 1, 2, 4, 8 except 8-byte integers).
enum class ScalarType : std::uint8_t { kInt8, kUint8, kInt16, kUint16, kInt32, kUint32, kFloat32, kFloat64 };

/// Bytes of one value of `type` (1, 2, 4 or 8).
std::size_t scalar_size(ScalarType type);
/// The canonical PLY name: int8, uint8, int16, uint16, int32, uint32, float32, float64.
const char* scalar_name(ScalarType type);
/// True for kFloat32 and kFloat64.
bool is_floating(ScalarType type);

/// One per-item property: either a fixed column of `components` values per item, or (is_list) a list of
/// any length per item. Both store their values as raw host-order bytes of `type`.
struct AttributeColumn {
  std::string name;
  ScalarType type = ScalarType::kFloat32;      ///< type of each value (each list item for lists)
  int components = 1;                          ///< values per item (fixed columns; PCD COUNT), >= 1
  bool is_list = false;                        ///< PLY `property list`: a variable number of values per item
  ScalarType count_type = ScalarType::kUint8;  ///< lists: the type the file stores each length in
  std::vector<std::uint8_t> bytes;             ///< the values, host byte order, items in order
  std::vector<std::uint64_t> offsets;          ///< lists: items + 1 value offsets (first 0), else empty

  /// Value `component` of item `item` (fixed columns) or value `component` of list `item`, as double.
  /// No bounds check.
  double value(std::size_t item, std::size_t component = 0) const;
  /// Stores `v` converted to `type` (C++ conversion, no range check) at the same place `value` reads.
  void set_value(std::size_t item, std::size_t component, double v);
  /// Length of list `item` (lists), or `components` (fixed columns).
  std::size_t length(std::size_t item) const;
  /// Typed pointer to the values; the caller must have checked that `type` matches T.
  template <typename T>
  T* values() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* values() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
};

/// An element other than the points (PLY `face`, `range_grid`, ...): `count` items, each with `properties`.
/// Kept opaque but faithful, so that a mesh or a range scan is written back as it was read.
struct CloudElement {
  std::string name;
  std::size_t count = 0;
  std::vector<AttributeColumn> properties;
};

/// What a reader learnt from the source file that a writer needs to reproduce it.
struct CloudMetadata {
  std::string source;                 ///< path it was read from (for messages)
  std::string format;                 ///< ply, pcd, kitti_bin, npy ("" = made in memory)
  std::string encoding;               ///< ply: ascii/binary_little_endian/binary_big_endian; pcd: DATA kind
  std::vector<std::string> comments;  ///< PLY `comment` lines, PCD `#` lines after the first (text only)
  std::vector<std::string> obj_info;  ///< PLY `obj_info` lines (text only)
  /// The point properties in file order, x, y, z included (PLY vertex properties, PCD FIELDS). Writers
  /// follow it; names not in the cloud are skipped and columns not named here follow at the end.
  std::vector<std::string> property_order;
  std::size_t points_element_index = 0;  ///< PLY: the vertex element's place among `elements`
  std::uint32_t width = 0;               ///< organised clouds (PCD WIDTH x HEIGHT); 0 = unorganised
  std::uint32_t height = 0;
  bool has_viewpoint = false;                            ///< PCD VIEWPOINT present
  std::array<double, 7> viewpoint{0, 0, 0, 1, 0, 0, 0};  ///< PCD: tx ty tz qw qx qy qz
  std::string pcd_version;                               ///< PCD VERSION text (0.7, .5, ...)
};

/// Positions plus everything else; see the file comment.
struct PointCloud {
  /// x y z per point, float, contiguous (3 * size()). For files whose x/y/z are not float32 the original
  /// columns are also kept in `attributes` under their names (x, y, z), and writers use them as long as
  /// the positions still equal their float conversion (so doubles survive a round trip).
  std::vector<float> xyz;
  std::vector<AttributeColumn> attributes;  ///< per-point columns and lists, one item per point
  std::vector<CloudElement> elements;       ///< the other elements, in file order
  CloudMetadata meta;

  std::size_t size() const { return xyz.size() / 3; }
  bool empty() const { return xyz.empty(); }
  /// Resizes the positions to `n` points (new ones 0) and every fixed column (new values 0). Lists
  /// cannot be resized this way: @throws InvalidArgument when the cloud has list attributes.
  void resize(std::size_t n);
  /// The column named `name`, or nullptr.
  const AttributeColumn* find(const std::string& name) const;
  AttributeColumn* find(const std::string& name);
  /// Appends a fixed column of `size()` zero items. @throws InvalidArgument on an empty name,
  /// components < 1, or a name already present.
  AttributeColumn& add_attribute(const std::string& name, ScalarType type, int components = 1);
  /// Checks that every column holds size() items and every element `count`. @throws DataError naming
  /// meta.source and the column.
  void validate() const;
  /// A read-only view of the positions for kernels (valid until xyz reallocates).
  PointsView<const float> view() const { return PointsView<const float>{xyz.data(), size()}; }
  PointsView<float> view() { return PointsView<float>{xyz.data(), size()}; }
};

/// Checks one column against `count` items. @throws DataError "`where`: column NAME ...".
void validate_column(const AttributeColumn& column, std::size_t count, const std::string& where);

}  // namespace s3d
