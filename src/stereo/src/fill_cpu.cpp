// Occlusion fill of invalid pixels, CPU backend (the row rule is fill_math.hpp, shared with CUDA).
#include <cstddef>

#include "backend.hpp"
#include "fill_math.hpp"

namespace s3d::stereo::detail::cpu {

void fill_occlusions(float* disparity, int width, int height) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) fill_occlusions_row(disparity + static_cast<std::ptrdiff_t>(y) * width, width);
}

}  // namespace s3d::stereo::detail::cpu
