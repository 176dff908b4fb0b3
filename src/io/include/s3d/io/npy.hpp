#pragma once
// NumPy `.npy` arrays of points: shape (N, K) with K >= 3, columns x y z then K - 3 more.
//
// Reading: format versions 1.0, 2.0 and 3.0; little or big endian (`<`, `>`, `|`); C or Fortran order;
// dtypes i1 u1 i2 u2 i4 u4 f4 f8 (kept as their type), i8 u8 (converted to float64, exact below 2^53).
// Columns 0..2 are the positions (non-float32 ones are also kept as attributes x, y, z); column k >= 3
// becomes the attribute `col<k>` (npy has no column names). Structured dtypes are not supported.
//
// Writing: float32, C order, shape (N, 3 + the attributes' components), version 1.0.
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/core/point_cloud.hpp"

namespace s3d::io {

/// Reads `path`. @throws IoError (cannot open, bad magic/header, truncated), DataError (unsupported dtype
/// or shape).
PointCloud read_npy(const std::string& path);

/// An int32 array read whole, its values in C order.
struct NpyInt32Array {
  std::vector<std::uint64_t> shape;
  std::vector<std::int32_t> values;
};

/// Reads an int32 `.npy` (`<i4`, `>i4`, `=i4`, any version above; Fortran order only up to 2 dimensions) into
/// C order and host byte order (voxel coordinates, index arrays). @throws IoError (cannot open, bad magic or
/// header, truncated data), DataError (another dtype, a Fortran array of more than 2 dimensions).
NpyInt32Array read_npy_int32(const std::string& path);

/// The header of a version-1.0, C-order `.npy` of `shape` elements of `dtype` (`<i4`, `<f4`, `<i8`, `<f8`):
/// magic, version, length, the dict padded so that the data starts on a 64-byte boundary (numpy's layout).
std::string npy_header(const char* dtype, const std::vector<std::int64_t>& shape);

/// npy_header followed by the elements at `data` (host byte order: s3d builds for little-endian hosts).
std::string npy_bytes(const void* data, const char* dtype, const std::vector<std::int64_t>& shape);

/// Writes `cloud` to exactly `path` as float32 (N, 3 + columns): positions, then every fixed attribute's
/// components in the cloud's order. Elements are not written. @throws IoError, InvalidArgument (lists).
void write_npy(const std::string& path, const PointCloud& cloud);

}  // namespace s3d::io
