// Rows of the computed cloud and rows of its file (cloud_layer.hpp).
#include <algorithm>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/points/cloud_layer.hpp"

namespace s3d::points {

void to_file_rows(std::vector<std::int32_t>& indices, const std::vector<std::int64_t>& rows) {
  if (rows.empty()) return;
  for (auto& i : indices)
    if (i >= 0) i = static_cast<std::int32_t>(rows[static_cast<std::size_t>(i)]);
}

std::vector<std::int32_t> spread_to_file_rows(const std::vector<std::int32_t>& values,
                                              const std::vector<std::int64_t>& rows, std::size_t file_rows,
                                              std::int32_t fill) {
  if (rows.empty()) {
    S3D_EXPECTS(values.size() == file_rows, "spread_to_file_rows: " + std::to_string(values.size()) +
                                                " values for a file of " + std::to_string(file_rows) + " rows");
    return values;
  }
  S3D_EXPECTS(rows.size() == values.size(), "spread_to_file_rows: " + std::to_string(values.size()) + " values for " +
                                                std::to_string(rows.size()) + " rows");
  std::vector<std::int32_t> out(file_rows, fill);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    S3D_EXPECTS(
        rows[i] >= 0 && static_cast<std::size_t>(rows[i]) < file_rows,
        "spread_to_file_rows: row " + std::to_string(rows[i]) + " outside the file's " + std::to_string(file_rows));
    out[static_cast<std::size_t>(rows[i])] = values[i];
  }
  return out;
}

std::optional<std::int64_t> computed_row(std::int64_t file_row, const std::vector<std::int64_t>& rows) {
  if (rows.empty()) return file_row;
  const auto it = std::lower_bound(rows.begin(), rows.end(), file_row);
  if (it == rows.end() || *it != file_row) return std::nullopt;
  return static_cast<std::int64_t>(it - rows.begin());
}

std::vector<float> gather_positions(const std::vector<float>& xyz, const std::vector<std::int32_t>& rows) {
  const std::size_t n = xyz.size() / 3;
  std::vector<float> out;
  out.reserve(3 * rows.size());
  for (std::int32_t r : rows) {
    S3D_EXPECTS(r >= 0 && static_cast<std::size_t>(r) < n,
                "gather_positions: row " + std::to_string(r) + " outside " + std::to_string(n) + " points");
    out.insert(out.end(), xyz.begin() + 3 * r, xyz.begin() + 3 * r + 3);
  }
  return out;
}

}  // namespace s3d::points
