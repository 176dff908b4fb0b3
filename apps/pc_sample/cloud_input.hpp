#pragma once
// One input cloud as pc-sample computes on it: read (the format by --input-format, the extension, or for
// stdin the first bytes), its points checked (finite, not empty; --drop-invalid removes non-finite ones),
// and its positions in fp32 relative to a local origin, the bounding-box centre in double (docs/PC-SAMPLE.md,
// "Coordinates"), so that georeferenced doubles lose nothing and a shifted cloud gives the same result.
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "s3d/core/point_cloud.hpp"
#include "s3d/io/point_cloud_io.hpp"

namespace s3d::pc_sample {

/// A checked cloud. `rows[i]` is point i's row in the file (identity when nothing was dropped).
struct InputCloud {
  PointCloud cloud;
  std::vector<std::int64_t> rows;  ///< empty = identity
  std::size_t dropped_invalid = 0;
  std::string name;  ///< the path as given, `<stdin>` for `-`
  std::int64_t file_row(std::int64_t i) const { return rows.empty() ? i : rows[static_cast<std::size_t>(i)]; }
};

/// Reads `path` (a readable path; `name` is how messages call it). Non-finite points fail the read with
/// "NAME: point I: non-finite coordinate ..." unless `drop_invalid`; an empty cloud fails with
/// "NAME: empty cloud". `storage`: a cloud whose storage the read reuses (io::read_point_cloud(path, &cloud);
/// its contents are replaced, so the result does not depend on it). @throws IoError, DataError,
/// InvalidArgument (unknown extension), all naming `name`.
InputCloud read_input_cloud(const std::string& path, const std::string& name, io::CloudFormat format, bool drop_invalid,
                            PointCloud storage = {});

/// Clouds whose storage the next reads reuse: a batch reads each file into a cloud an earlier item gave
/// back (io::read_point_cloud(path, &cloud)), so once the sizes settle nothing is allocated or zero-filled
/// per file (PLY; the other formats' readers replace the storage). Loads run ahead on several worker threads,
/// so there is one cloud per item in flight: the pool holds at most as many clouds as were in use at once (the
/// read-ahead window), but each keeps the capacity of the largest file it has held, so a batch mixing sizes can
/// keep up to that many times the largest cloud until the run ends. Thread-safe.
class CloudPool {
 public:
  /// A cloud given back earlier (the latest, its pages the likeliest in cache), or an empty one.
  PointCloud take();
  /// Keeps `cloud`'s storage for a later take() (drops it if it has none, or if the pool cannot grow: a later
  /// read allocates).
  void give_back(PointCloud cloud) noexcept;

 private:
  std::mutex mutex_;
  std::vector<PointCloud> free_;
};

}  // namespace s3d::pc_sample
