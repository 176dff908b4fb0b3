#include "s3d/io/point_cloud_io.hpp"

#include <algorithm>
#include <filesystem>

#include "s3d/core/errors.hpp"

namespace s3d::io {

CloudFormat parse_cloud_format(const std::string& text) {
  if (text == "auto") return CloudFormat::kAuto;
  if (text == "ply") return CloudFormat::kPly;
  if (text == "pcd") return CloudFormat::kPcd;
  if (text == "bin" || text == "kitti") return CloudFormat::kKittiBin;
  if (text == "npy") return CloudFormat::kNpy;
  throw InvalidArgument("unknown point-cloud format '" + text + "' (expected ply, pcd, bin, npy)");
}

const char* to_string(CloudFormat format) {
  switch (format) {
    case CloudFormat::kAuto:
      return "auto";
    case CloudFormat::kPly:
      return "ply";
    case CloudFormat::kPcd:
      return "pcd";
    case CloudFormat::kKittiBin:
      return "bin";
    case CloudFormat::kNpy:
      return "npy";
  }
  return "?";
}

CloudFormat cloud_format_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".ply") return CloudFormat::kPly;
  if (ext == ".pcd") return CloudFormat::kPcd;
  if (ext == ".bin") return CloudFormat::kKittiBin;
  if (ext == ".npy") return CloudFormat::kNpy;
  throw InvalidArgument(path + ": unknown point-cloud extension (use .ply, .pcd, .bin, .npy or give a format)");
}

PointCloud read_point_cloud(const std::string& path, CloudFormat format) {
  switch (format == CloudFormat::kAuto ? cloud_format_of(path) : format) {
    case CloudFormat::kPly:
      return read_ply(path);
    case CloudFormat::kPcd:
      return read_pcd(path);
    case CloudFormat::kKittiBin:
      return read_kitti_bin(path);
    case CloudFormat::kNpy:
      return read_npy(path);
    case CloudFormat::kAuto:
      break;
  }
  throw InvalidArgument(path + ": no point-cloud format");
}

void read_point_cloud(const std::string& path, PointCloud* cloud, CloudFormat format) {
  try {
    if ((format == CloudFormat::kAuto ? cloud_format_of(path) : format) == CloudFormat::kPly)
      return read_ply(path, cloud);
    *cloud = read_point_cloud(path, format);
  } catch (...) {
    *cloud = PointCloud{};
    throw;
  }
}

void write_point_cloud(const std::string& path, const PointCloud& cloud, const CloudWriteOptions& options) {
  switch (options.format == CloudFormat::kAuto ? cloud_format_of(path) : options.format) {
    case CloudFormat::kPly:
      return write_ply(path, cloud, options.ply);
    case CloudFormat::kPcd:
      return write_pcd(path, cloud, options.pcd);
    case CloudFormat::kKittiBin:
      return write_kitti_bin(path, cloud);
    case CloudFormat::kNpy:
      return write_npy(path, cloud);
    case CloudFormat::kAuto:
      break;
  }
  throw InvalidArgument(path + ": no point-cloud format");
}

}  // namespace s3d::io
