#include "point_checks.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "s3d/core/errors.hpp"

namespace s3d::points::detail {

void check_finite(PointsView<const float> points, const char* what) {
  for (std::size_t i = 0; i < 3 * points.size; ++i) {
    if (!std::isfinite(points.xyz[i])) {
      char value[32];
      std::snprintf(value, sizeof value, "%.9g", static_cast<double>(points.xyz[i]));
      throw DataError(std::string(what) + ": point " + std::to_string(i / 3) + " has a non-finite coordinate (" +
                      value + ")");
    }
  }
}

}  // namespace s3d::points::detail
