// 3x3 median over valid pixels, CPU backend.
#include "backend.hpp"
#include "median_math.hpp"

namespace s3d::stereo::detail::cpu {

void median3x3(const float* in, float* out, int width, int height) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(y) * width + x;
      out[i] = finite_disparity(in[i]) ? median3x3_at(in, width, x, y, width, height) : in[i];
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
