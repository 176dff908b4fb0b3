#pragma once
// Colour-mapped pictures of disparity / depth / confidence maps, for looking at (not for reading back).
#include <string>

#include "s3d/io/image.hpp"

namespace s3d::io {

enum class Colormap { kTurbo, kJet, kGrey };

/// Parses `turbo`, `jet` or `grey`. @throws InvalidArgument
Colormap parse_colormap(const std::string& name);

/// Maps `values` (1 channel) linearly from [lo, hi] onto the colour map (values outside are clamped) and
/// returns 3-channel RGB. Non-finite values (invalid) are black. When lo >= hi the range of the finite
/// values is used. High values are warm (red) in turbo/jet: near objects, large disparity.
ImageU8 colorize(const ImageF& values, float lo, float hi, Colormap map = Colormap::kTurbo);

}  // namespace s3d::io
