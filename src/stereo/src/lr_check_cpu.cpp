// Left-right consistency, CPU backend (the rule is in median_math.hpp, shared with CUDA).
#include "backend.hpp"
#include "median_math.hpp"

namespace s3d::stereo::detail::cpu {

void lr_check(float* left, const float* right, int width, int height, float max_diff) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) {
    float* l = left + static_cast<std::ptrdiff_t>(y) * width;
    const float* r = right + static_cast<std::ptrdiff_t>(y) * width;
    for (int x = 0; x < width; ++x) {
      if (finite_disparity(l[x]) && !lr_consistent(l[x], x, r, width, max_diff)) l[x] = kInvalidDisparity;
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
