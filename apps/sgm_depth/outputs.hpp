#pragma once
// sgm-depth's write stage: what can be emitted (disparity, depth, cloud, confidence, colour picture),
// the file formats each accepts, and their encoding, on a frame worker thread.
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/image.hpp"

namespace s3d::sgm_depth {

enum class Emit { kDisparity, kDepth, kCloud, kConfidence, kColor, kError };

/// `disparity`, `depth`, `cloud`, `confidence`, `color` (or `colour`), `error`. @throws InvalidArgument
Emit parse_emit(const std::string& name);
const char* emit_name(Emit e);
/// Name suffix of each output under --output-dir (only disparity keeps the bare stem): `.pfm`, `_depth.pfm`...
const char* default_suffix(Emit e);
bool needs_calibration(Emit e);

/// How outputs are encoded (from the command line).
struct EncodeSettings {
  std::string png_encoding;                ///< kitti|x16 for a disparity PNG; empty = kitti
  double depth_scale = io::kDepthScaleMm;  ///< 16-bit depth PNG value per metre
  std::string colormap = "turbo";
  float color_lo = 0.0f, color_hi = 64.0f;  ///< disparity range of the colour map
  float max_depth = 0.0f;                   ///< cloud: drop points farther (metres); 0 = keep all
  bool ply_ascii = false;
};

/// What one item's outputs are made from.
struct OutputSource {
  const io::ImageF& disparity;
  const std::vector<float>& confidence;               ///< empty unless confidence was asked for
  const io::StereoCalibration* calib;                 ///< null unless depth/cloud
  const std::string& left_path;                       ///< the cloud's colours
  const io::ImageF* gt = nullptr;                     ///< the ground truth (error): null without one
  const std::vector<std::uint8_t>* nonocc = nullptr;  ///< its non-occluded mask (error): empty without one
};

/// Encodes `e` as `format` (pfm, png, ply...) and writes it atomically to `path` through `ctx`, timing
/// "encode" (pixel values: PNG integer encoding, depth, colours, cloud points) and "write" (the format
/// writer: PNG compression or PFM bytes, and the disk).
/// @throws InvalidArgument for a format `e` cannot be written as; IoError, DataError.
void write_output(cli::ItemContext& ctx, const std::string& path, const std::string& format, Emit e,
                  const OutputSource& source, const EncodeSettings& settings);

}  // namespace s3d::sgm_depth
