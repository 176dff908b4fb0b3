#pragma once
// pc-sample's output files, each written through the frame (atomic, `-` = stdout): a cloud in the format of
// its path (the input's encoding kept when the format is the input's), indices as text or .npy, and the
// neighbour / weight arrays as .npy (int32, float32; C order, format version 1.0).
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/core/point_cloud.hpp"

namespace s3d::pc_sample {

/// Writes `content` to `path` atomically.
void write_bytes(cli::ItemContext& ctx, const std::string& path, const std::string& content);

/// Writes point indices: .npy int32 when the output's format is npy, else text, one per line.
void write_indices(cli::ItemContext& ctx, const std::string& path, const std::string& format,
                   const std::vector<std::int32_t>& indices);

/// Writes `cloud` as `format` (ply, pcd, bin, npy); a PLY or PCD output of a PLY or PCD input keeps the
/// input's encoding (ascii, binary, binary_big_endian, binary_compressed).
/// @throws InvalidArgument for a format that is not a cloud format.
void write_cloud(cli::ItemContext& ctx, const std::string& path, const std::string& format, const PointCloud& cloud);

}  // namespace s3d::pc_sample
