#include "cloud_input.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include <sstream>
#include <utility>

#include "s3d/core/errors.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::pc_sample {
namespace {

/// stdin has no extension: PLY and PCD announce themselves, .npy has a magic; anything else is KITTI .bin.
io::CloudFormat sniff_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  const std::string text(head, static_cast<std::size_t>(in.gcount()));
  if (text.rfind("ply", 0) == 0) return io::CloudFormat::kPly;
  if (text.rfind("\x93NUMPY", 0) == 0) return io::CloudFormat::kNpy;
  if (text.rfind("# .PCD", 0) == 0 || text.rfind("VERSION", 0) == 0) return io::CloudFormat::kPcd;
  return io::CloudFormat::kKittiBin;
}

/// The readers name the path they were given; for stdin that is a temp copy, which means nothing to a user.
std::string renamed(std::string message, const std::string& path, const std::string& name) {
  if (path == name) return message;
  for (std::size_t at = message.find(path); at != std::string::npos; at = message.find(path, at + name.size()))
    message.replace(at, path.size(), name);
  return message;
}

void read_named(const std::string& path, const std::string& name, io::CloudFormat format, PointCloud* cloud) {
  try {
    io::read_point_cloud(path, cloud, format);
  } catch (const IoError& e) {
    throw IoError(renamed(e.what(), path, name));
  } catch (const DataError& e) {
    throw DataError(renamed(e.what(), path, name));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(renamed(e.what(), path, name));
  }
}

}  // namespace

InputCloud read_input_cloud(const std::string& path, const std::string& name, io::CloudFormat format, bool drop_invalid,
                            PointCloud storage) {
  if (format == io::CloudFormat::kAuto && name == "<stdin>") format = sniff_format(path);
  InputCloud in;
  in.name = name;
  in.cloud = std::move(storage);
  read_named(path, name, format, &in.cloud);
  in.cloud.meta.source = name;
  const PointCloud& c = in.cloud;
  if (c.empty()) throw DataError(name + ": empty cloud (no points)");

  const std::size_t n = c.size();
  std::vector<std::int64_t> keep;
  if (!drop_invalid) {
    if (const auto bad = points::first_non_finite(c)) {
      std::ostringstream os;
      os << name << ": point " << bad->row << ": non-finite coordinate ("
         << "xyz"[bad->axis] << " = " << bad->value << "); --drop-invalid skips such points";
      throw DataError(os.str());
    }
  } else {
    keep = points::finite_rows(c);
  }
  if (drop_invalid && keep.size() != n) {
    in.dropped_invalid = n - keep.size();
    if (keep.empty()) throw DataError(name + ": empty cloud (all " + std::to_string(n) + " points non-finite)");
    points::ElementChanges not_reported;  // faces of a dropped point go with it, as select_rows says
    in.cloud = points::select_rows(c, keep, false, not_reported);
    in.rows = std::move(keep);
  }
  return in;
}

PointCloud CloudPool::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) return PointCloud{};
  PointCloud cloud = std::move(free_.back());
  free_.pop_back();
  return cloud;
}

void CloudPool::give_back(PointCloud cloud) noexcept {
  // An item that never read into its cloud (a rulebook from .npy coordinates, a failed read) has nothing to
  // lend; keeping it would grow the pool by one cloud an item.
  if (cloud.xyz.capacity() == 0 && cloud.attributes.empty()) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(cloud));
  } catch (...) {  // std::bad_alloc, std::system_error: the cloud is freed instead
  }
}

}  // namespace s3d::pc_sample
