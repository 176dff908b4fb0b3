// Left-right consistency, CPU backend (the rule is in median_math.hpp, shared with CUDA).
#include <cmath>

#include "backend.hpp"
#include "median_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

/// lr_consistent() with floorf() done inline (no libm call on baseline x86-64): for |t| < 2^30 the
/// truncation corrected by one below a negative non-integer is floor(t) exactly (every float >= 2^23 is an
/// integer); anything larger goes through lr_consistent() itself.
inline bool consistent(float d, int x, const float* right_row, int width, float max_diff) {
  const float t = d + 0.5f;
  if (!(t > -1.0e9f && t < 1.0e9f)) return lr_consistent(d, x, right_row, width, max_diff);
  int f = static_cast<int>(t);
  if (static_cast<float>(f) > t) --f;
  const int xr = x - f;
  if (xr < 0 || xr >= width) return false;
  const float dr = right_row[xr];
  if (!finite_disparity(dr)) return false;
  const float diff = d > dr ? d - dr : dr - d;
  return diff <= max_diff;
}

}  // namespace

void lr_check(float* left, const float* right, int width, int height, float max_diff) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) {
    float* l = left + static_cast<std::ptrdiff_t>(y) * width;
    const float* r = right + static_cast<std::ptrdiff_t>(y) * width;
    for (int x = 0; x < width; ++x) {
      if (finite_disparity(l[x]) && !consistent(l[x], x, r, width, max_diff)) l[x] = kInvalidDisparity;
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
