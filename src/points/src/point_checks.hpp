#pragma once
// Checks of host point arrays that more than one engine makes.
#include "s3d/core/views.hpp"

namespace s3d::points::detail {

/// Host inputs must be finite: a NaN compares false everywhere and would silently vanish from (or, in FPS, take
/// over) every answer. @throws DataError "WHAT: point I has a non-finite coordinate (V)".
void check_finite(PointsView<const float> points, const char* what);

}  // namespace s3d::points::detail
