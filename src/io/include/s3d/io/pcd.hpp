#pragma once
// PCD (Point Cloud Library's format, v0.7 and the older v0.5/v0.6 headers) for s3d::PointCloud.
//
// Reading: DATA ascii, binary and binary_compressed (LZF, decoded here); FIELDS (or COLUMNS) with SIZE,
// TYPE (I/U of 1, 2, 4 bytes, F of 4 or 8) and COUNT; WIDTH x HEIGHT organised clouds (kept in meta.width /
// meta.height); VIEWPOINT (meta.viewpoint, tx ty tz qw qx qy qz); NaN points kept as they are. x/y/z become
// the positions, every other field an attribute of its type and COUNT (`rgb`/`rgba` keep their packed bits
// as uint32 or float32, whichever the file declares; `_` padding fields are kept too).
//
// Writing: VERSION 0.7, the cloud's field order, WIDTH x HEIGHT from meta when it matches the size (else
// N x 1), the viewpoint, and the chosen DATA kind (binary_compressed compresses with LZF).
#include <string>

#include "s3d/core/point_cloud.hpp"

namespace s3d::io {

enum class PcdData { kAscii, kBinary, kBinaryCompressed };

/// Reads `path`. Header counts are checked against the file's size before anything is allocated.
/// @throws IoError (cannot open, bad header, truncated or corrupt data), DataError (no x/y/z,
/// unsupported field type); what() is one line starting with `path`.
PointCloud read_pcd(const std::string& path);

/// Writes `cloud`'s points to exactly `path` (other elements are not representable in PCD and are not
/// written). @throws IoError, InvalidArgument (list attributes).
void write_pcd(const std::string& path, const PointCloud& cloud, PcdData data = PcdData::kBinary);

/// `ascii`, `binary`, `binary_compressed`. @throws InvalidArgument
PcdData parse_pcd_data(const std::string& text);
const char* to_string(PcdData data);

}  // namespace s3d::io
