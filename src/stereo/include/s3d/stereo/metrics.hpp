#pragma once
// Disparity accuracy against ground truth, with the metrics the stereo benchmarks report:
// Middlebury bad-1.0 / bad-2.0 (% of evaluated pixels with |d - d_gt| > 1 / 2 px) and average absolute
// error, KITTI D1 (% with error > 3 px AND > 5 % of d_gt), and density. Each error rate is given two ways:
//   - "*_all"  : over every evaluated GT pixel, an invalid estimate counted as wrong (KITTI/Middlebury
//                "with invalid", the number that cannot be gamed by dropping hard pixels);
//   - "*_est"  : over evaluated GT pixels that have a valid estimate only.
// Evaluated pixels = finite GT with d_gt > 0, inside the region's mask (if any), inside the column range
// [x_min, x_max). Estimates: finite = valid (+inf / NaN = invalid).
// Reading masks from files and JSON output live in s3d::stereo_eval (s3d/io/stereo_eval.hpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/core/views.hpp"

namespace s3d::stereo {

/// A named evaluation region (Middlebury `nonocc`, `all`, `disc`), true = evaluated.
struct EvalMask {
  std::string name;
  std::vector<std::uint8_t> mask;  ///< width * height, non-zero = evaluated
};

struct EvalOptions {
  int x_min = 0;   ///< first evaluated column
  int x_max = -1;  ///< one past the last evaluated column; <= 0 = width
};

/// Errors over one region. Percentages are in [0, 100]; avg_err in pixels. NaN when gt_pixels == 0.
struct RegionErrors {
  std::string region;         ///< mask name, or "all" for every valid GT pixel when there is no mask
  std::size_t gt_pixels = 0;  ///< evaluated GT pixels
  std::size_t estimated = 0;  ///< of which the estimate is valid
  double density = 0.0;       ///< 100 * estimated / gt_pixels
  double bad1_all = 0.0, bad2_all = 0.0, d1_all = 0.0;                     ///< invalid counted as wrong
  double bad1_est = 0.0, bad2_est = 0.0, d1_est = 0.0, avg_err_est = 0.0;  ///< estimated pixels only
};

struct EvalResult {
  std::vector<RegionErrors> regions;  ///< one per mask (or one "all"), in the masks' order
  double density = 0.0;               ///< % of all image pixels (in the column range) with a valid estimate
  /// The region named `name`, or nullptr.
  const RegionErrors* find(const std::string& name) const;
};

/// The density of a disparity map without ground truth: % of its pixels with a finite (valid) estimate; NaN for
/// an empty map.
double valid_percent(ImageView<const float> disparity);

/// Compares `estimate` with `gt` (host views of the same size; masks of width * height).
/// @throws DataError when the sizes differ (one line, sizes).
EvalResult evaluate_disparity(ImageView<const float> estimate, ImageView<const float> gt,
                              const std::vector<EvalMask>& masks, const EvalOptions& options = {});

}  // namespace s3d::stereo
