#pragma once
// PLY (Stanford polygon file) for s3d::PointCloud: every element and property is kept, so a mesh, a range
// scan or a coloured cloud is written back as it was read.
//
// Reading: ascii, binary_little_endian and binary_big_endian; every scalar type under both spellings
// (char/uchar/short/ushort/int/uint/float/double and int8/uint8/int16/uint16/int32/uint32/float32/float64);
// `property list` in any element (list lengths of an integer type); `comment` and `obj_info` lines. The
// `vertex` element becomes the points (x, y, z -> positions, the other properties -> attributes); every
// other element is kept in PointCloud::elements, in file order.
//
// Writing: the layout of meta.property_order and meta.points_element_index (the source's layout when the
// cloud was read from a PLY), PLY 1.0 type names (char ... double), numbers in ascii as the shortest
// text that reads back to the same value. A fixed attribute with components > 1 (from PCD COUNT) is written
// as properties NAME_0, NAME_1, ...
#include <string>

#include "s3d/core/point_cloud.hpp"

namespace s3d::io {

/// PLY data encodings.
enum class PlyFormat { kBinaryLittleEndian, kAscii, kBinaryBigEndian };

/// Reads `path`. Every count in the header is checked against the file's size before anything is
/// allocated. @throws IoError (cannot open, not a PLY, bad header, truncated or unparsable data) and
/// DataError (no vertex element, or no x/y/z in it); what() is one line starting with `path`.
PointCloud read_ply(const std::string& path);
/// As read_ply(path), into `cloud` (not null), replacing all it held but reusing the storage of its
/// positions and of its point attributes that the file has again (by name): reading a dataset's files in a
/// loop into one cloud then allocates (and zero-fills) nothing once the sizes settle, and the result is the
/// same as read_ply(path)'s. Other elements are allocated afresh. @throws as read_ply, leaving `cloud` empty.
void read_ply(const std::string& path, PointCloud* cloud);

/// Writes `cloud` to exactly `path` (callers that need atomic outputs pass a temporary path).
/// @throws IoError (cannot write), InvalidArgument (a list longer than its length type can hold),
/// DataError (inconsistent cloud, see PointCloud::validate).
void write_ply(const std::string& path, const PointCloud& cloud, PlyFormat format = PlyFormat::kBinaryLittleEndian);

/// `ascii`, `binary` (= little endian), `binary_little_endian`, `binary_big_endian`. @throws InvalidArgument
PlyFormat parse_ply_format(const std::string& text);

}  // namespace s3d::io
