#pragma once
// Test-only: the 16-bit depth PNGs and colour JPEGs of ../shared/data/rgbd read with libpng and libjpeg directly
// (no s3d::io, so the gpu preset, which has no OpenCV, builds these suites too); depth in metres, 0 and 65535
// invalid.
#include <filesystem>
#include <string>

#include "s3d/core/image.hpp"

namespace s3d::test {

/// The 7-Scenes redkitchen frames of ../shared/data (or $S3D_DATA_DIR).
std::filesystem::path redkitchen_dir();
/// `frame-XXXXXX.depth.png` of redkitchen_dir(), in metres (mm / 1000; 0 and 65535 -> 0). Throws on error.
Image<float> read_redkitchen_depth(int frame);
/// Colour frame `frame` of the redkitchen sequence, RGB (libjpeg's decoder). Throws std::runtime_error on error.
Image<std::uint8_t> read_redkitchen_color(int frame);
/// Any 16-bit grey PNG in metres (value / scale; 0 and 65535 -> 0). Throws std::runtime_error on error.
Image<float> read_depth_png(const std::filesystem::path& path, float scale);

}  // namespace s3d::test
