#pragma once
// Point-cloud files by format: PLY (ply.hpp), PCD (pcd.hpp), KITTI Velodyne .bin (kitti_bin.hpp) and
// NumPy .npy (npy.hpp), chosen by extension unless a format is given. docs/FORMATS.md tells what each
// format keeps.
#include <string>

#include "s3d/core/point_cloud.hpp"
#include "s3d/io/kitti_bin.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/pcd.hpp"
#include "s3d/io/ply.hpp"

namespace s3d::io {

enum class CloudFormat { kAuto, kPly, kPcd, kKittiBin, kNpy };

/// `auto`, `ply`, `pcd`, `bin` (or `kitti`), `npy`. @throws InvalidArgument
CloudFormat parse_cloud_format(const std::string& text);
/// `ply`, `pcd`, `bin`, `npy` (`auto` for kAuto).
const char* to_string(CloudFormat format);
/// The format of `path`'s extension (case-insensitive .ply, .pcd, .bin, .npy).
/// @throws InvalidArgument naming the path for any other extension.
CloudFormat cloud_format_of(const std::string& path);

/// How write_point_cloud encodes each format.
struct CloudWriteOptions {
  CloudFormat format = CloudFormat::kAuto;         ///< kAuto = by the path's extension
  PlyFormat ply = PlyFormat::kBinaryLittleEndian;  ///< PLY encoding
  PcdData pcd = PcdData::kBinary;                  ///< PCD DATA kind
};

/// Reads `path` in `format` (kAuto: by extension). @throws IoError, DataError (see each format's reader),
/// InvalidArgument (unknown extension).
PointCloud read_point_cloud(const std::string& path, CloudFormat format = CloudFormat::kAuto);
/// As read_point_cloud(path, format), into `cloud` (not null), whose storage a PLY reuses (see
/// read_ply(path, cloud)); the other formats replace it. @throws as read_point_cloud, leaving `cloud` empty.
void read_point_cloud(const std::string& path, PointCloud* cloud, CloudFormat format = CloudFormat::kAuto);

/// Writes `cloud` to exactly `path` (not atomic: the CLI frame hands a temporary path). @throws IoError,
/// InvalidArgument (unknown extension, content the format cannot hold), DataError (inconsistent cloud).
void write_point_cloud(const std::string& path, const PointCloud& cloud, const CloudWriteOptions& options = {});

}  // namespace s3d::io
