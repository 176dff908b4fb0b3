#pragma once
// ZIP archives written whole in memory, members stored uncompressed (method 0) with their CRC-32: the
// container of numpy's `.npz` and of evo's result files. No ZIP64: an archive is at most 4 GiB.
#include <string>
#include <utility>
#include <vector>

namespace s3d::io {

/// The archive of `members` (name, bytes), in order, dated 1980-01-01 00:00 (the same bytes on every run).
/// @throws DataError naming the first member that would take the archive past 4 GiB.
std::string zip_stored(const std::vector<std::pair<std::string, std::string>>& members);

}  // namespace s3d::io
