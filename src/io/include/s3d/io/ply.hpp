#pragma once
// Coloured point clouds and the PLY format (Stanford polygon file, vertex element only).
// Writers produce `x y z` (float32) + `red green blue` (uchar), binary little endian by default.
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/io/calib.hpp"
#include "s3d/io/image.hpp"

namespace s3d::io {

/// Points with an RGB colour each. Coordinates in the camera frame of calib.hpp (metres, y down).
struct PointCloud {
  std::vector<float> xyz;          ///< 3 per point
  std::vector<std::uint8_t> rgb;   ///< 3 per point, or empty (no colour)
  std::size_t size() const { return xyz.size() / 3; }
};

enum class PlyFormat { kBinaryLittleEndian, kAscii };

/// One point per valid disparity pixel (finite, d + doffs > 0, depth <= max_depth_m), in raster order,
/// coloured from `colour` (1 or 3 channels of the same size, e.g. the left image) or grey 255 when null.
/// @throws DataError when `colour` has another size.
PointCloud cloud_from_disparity(const ImageF& disparity, const StereoCalibration& calib,
                                const ImageU8* colour = nullptr, float max_depth_m = kInvalid);

/// Writes `cloud` to exactly `path` (header: `element vertex N`, `property float x|y|z`, and when
/// coloured `property uchar red|green|blue`). @throws IoError
void write_ply(const std::string& path, const PointCloud& cloud,
               PlyFormat format = PlyFormat::kBinaryLittleEndian);

/// Reads the vertex element of an ASCII or binary (either endianness) PLY: x, y, z (any numeric type)
/// and red, green, blue when present; other properties and elements are skipped.
/// @throws IoError (cannot open, truncated, list properties in the vertex element), DataError (no x/y/z).
PointCloud read_ply(const std::string& path);

}  // namespace s3d::io
