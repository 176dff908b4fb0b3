#pragma once
// Per-stage entry points of the SGM pipeline, for tests, debugging and research. Each takes and returns
// HOST memory and synchronizes; on a CUDA device it uploads, runs that stage's kernel and downloads, so the
// CPU and CUDA results of one stage can be compared bit for bit. Production code uses SgmEngine.
// The engine runs them in this order: census, aggregate, wta (both views with the LR check), lr_check,
// median3x3, speckle, [confidence zeroed where invalid], fill_occlusions (the occlusion fill, when SgmParams::fill).
// All images are dense row-major (pitch == width).
#include <cstdint>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/views.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::stereo::stages {

/// Which image is the reference of a matching run: the left (d = x_left - x_right, target pixel x - d) or
/// the right (target pixel x + d in the left image; used by the left-right check).
enum class View { kLeft, kRight };

/// Census codes, one uint64 per pixel (the low census_bits() bits are used). Pixels outside the image are
/// replicated from the border. @throws InvalidArgument on a bad window.
std::vector<std::uint64_t> census(const Device& device, ImageView<const std::uint8_t> image, CensusKind kind,
                                  int window_width, int window_height);
std::vector<std::uint64_t> census(const Device& device, ImageView<const std::uint16_t> image, CensusKind kind,
                                  int window_width, int window_height);

/// Matching cost of (x, y, d) = popcount(ref[x] ^ target[x -/+ d]); census_bits() when the target pixel lies
/// outside the image. Aggregated volume sum_r L_r, layout [y][x][d] (d = disparity - min_disparity),
/// width*height*disparities uint16. Uses params.disparities, min_disparity, paths, p1, p2, census_bits().
std::vector<std::uint16_t> aggregate(const Device& device, const std::vector<std::uint64_t>& census_left,
                                     const std::vector<std::uint64_t>& census_right, int width, int height,
                                     const SgmParams& params, View view);

/// Winner-take-all over an aggregated volume, with params.uniqueness, params.subpixel and (when
/// `confidence` is non-null) the confidence map. Disparities in pixels (min_disparity added), invalid
/// = kInvalidDisparity (uniqueness, or the winner's target pixel outside the image).
void wta(const Device& device, const std::vector<std::uint16_t>& volume, int width, int height, const SgmParams& params,
         View view, std::vector<float>& disparity, std::vector<float>* confidence);

/// Left-right check: left pixel x with disparity d is kept iff the right view's disparity at
/// xr = x - floor(d + 0.5) exists and |d - d_right(xr)| <= max_diff. Returns the filtered left map.
std::vector<float> lr_check(const Device& device, const std::vector<float>& left, const std::vector<float>& right,
                            int width, int height, float max_diff);

/// 3x3 median over the valid pixels of each window; invalid centres stay invalid, the border row/column
/// uses the part of the window inside the image.
std::vector<float> median3x3(const Device& device, const std::vector<float>& disparity, int width, int height);

/// OpenCV filterSpeckles semantics: 4-connected regions of valid pixels whose neighbours differ by
/// <= max_diff; regions of <= max_size pixels become invalid.
std::vector<float> speckle(const Device& device, const std::vector<float>& disparity, int width, int height,
                           int max_size, float max_diff);

/// Occlusion fill (SgmParams::fill; after Hirschmüller 2008): in each row, every maximal run of invalid
/// pixels [b, e) with valid neighbours l = d[b-1] and r = d[e] on both sides and e - b <= |l - r| + 2 (as
/// wide as the depth step it lies beside, 2 px of slack: an occlusion) takes the smaller (farther,
/// background) of l and r. Other runs stay invalid: wider ones, and those at a row's start or end. Only
/// copies values of the input row (bit-identical on every device). @throws InvalidArgument on a size below 1x1 or a map
/// of another size.
std::vector<float> fill_occlusions(const Device& device, const std::vector<float>& disparity, int width, int height);

}  // namespace s3d::stereo::stages
