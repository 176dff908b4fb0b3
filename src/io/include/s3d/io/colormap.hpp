#pragma once
// Colour-mapped pictures of disparity / depth / confidence maps, for looking at (not for reading back).
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/io/image.hpp"

namespace s3d::io {

enum class Colormap { kTurbo, kJet, kGrey };

/// Parses `turbo`, `jet` or `grey`. @throws InvalidArgument
Colormap parse_colormap(const std::string& name);

/// Maps `values` (1 channel) linearly from [lo, hi] onto the colour map (values outside are clamped) and
/// returns 3-channel RGB. Non-finite values (invalid) are black. When lo >= hi the range of the finite
/// values is used. High values are warm (red) in turbo/jet: near objects, large disparity.
ImageU8 colorize(const ImageF& values, float lo, float hi, Colormap map = Colormap::kTurbo);

/// The KITTI stereo devkit's log-colour error picture (`io_disp.h`, errorImage with log colours): where the
/// ground truth is finite, the error e = |estimate - gt| normalised as min(e / 3, 20 e / |gt|) picks one of ten
/// colours (bins [0, 1/16), [1/16, 1/8), ..., [8, 16), [16, inf), blue to red), halved where `nonocc` is given
/// and 0 (an occluded pixel), painted over the pixel's 3x3 neighbourhood (pixels on the image border paint
/// none); black where there is no ground truth. Estimates that are not finite are first filled as the devkit
/// interpolates them (each row's gaps by the smaller neighbour, then extended to the row's and column's ends).
/// @throws InvalidArgument for images of different sizes (or a mask of another size, when not empty).
ImageU8 disparity_error_image(const ImageF& estimate, const ImageF& gt, const std::vector<std::uint8_t>& nonocc);

}  // namespace s3d::io
