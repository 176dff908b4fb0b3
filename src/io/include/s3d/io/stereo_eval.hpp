#pragma once
// Files and reports around the disparity metrics of s3d::stereo (metrics.hpp): the Middlebury masks that sit
// beside a ground-truth file, and the metrics as JSON. Link s3d::stereo_eval (not part of s3d::io, which
// links no domain library).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "s3d/io/image.hpp"
#include "s3d/stereo/metrics.hpp"

namespace s3d::io {

/// The masks that exist beside a ground-truth file: `nonocc.png`, `all.png`, `disc.png` in its folder
/// (255 = evaluated; for disc, 255 = near a discontinuity). Missing files are simply left out; a mask of
/// another size than `width` x `height` is a DataError naming it.
std::vector<stereo::EvalMask> find_masks(const std::string& gt_path, int width, int height);

/// {"density": .., "regions": {"nonocc": {"bad1_all":..,...}, ...}} (NaN written as null).
nlohmann::json to_json(const stereo::EvalResult& result);

}  // namespace s3d::io
