#pragma once
// One input cloud as pc-sample computes on it: read (the format by --input-format, the extension, or for
// stdin the first bytes), its points checked (finite, not empty; --drop-invalid removes non-finite ones),
// and its positions in fp32 relative to a local origin, the bounding-box centre in double (docs/PC-SAMPLE.md,
// "Coordinates"), so that georeferenced doubles lose nothing and a shifted cloud gives the same result.
#include <array>
#include <cstdint>
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
/// "NAME: empty cloud". @throws IoError, DataError, InvalidArgument (unknown extension), all naming `name`.
InputCloud read_input_cloud(const std::string& path, const std::string& name, io::CloudFormat format,
                            bool drop_invalid);

/// The bounding-box centre of the cloud's coordinates in double (the original x/y/z columns when the file
/// stored them as another type than float32).
std::array<double, 3> bbox_centre(const PointCloud& cloud);
/// The positions minus `origin`, each coordinate computed in double and rounded once to fp32.
std::vector<float> local_positions(const PointCloud& cloud, const std::array<double, 3>& origin);

}  // namespace s3d::pc_sample
