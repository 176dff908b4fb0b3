#pragma once
// KITTI Velodyne scans (`velodyne/*.bin`): float32 little endian x y z reflectance per point, no header.
#include <string>

#include "s3d/core/point_cloud.hpp"

namespace s3d::io {

/// Reads `path`: positions and a float32 attribute `intensity` (the reflectance, 0..1).
/// @throws IoError (cannot open), DataError (size not a multiple of 16 bytes).
PointCloud read_kitti_bin(const std::string& path);

/// Writes positions and `intensity` (converted to float32; `reflectance` when there is no `intensity`;
/// 0 when neither exists) to exactly `path`. Other attributes and elements are not representable and
/// are not written. @throws IoError, InvalidArgument (an intensity column that is a list or has several
/// components).
void write_kitti_bin(const std::string& path, const PointCloud& cloud);

}  // namespace s3d::io
