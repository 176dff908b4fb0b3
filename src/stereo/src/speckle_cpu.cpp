// Speckle filter, CPU backend: OpenCV filterSpeckles semantics (4-connected regions of valid pixels whose
// neighbours differ by <= max_diff; regions of <= max_size pixels become invalid). One flood fill with an
// explicit stack; the CUDA backend finds the same components with union-find.
#include <cmath>

#include "backend.hpp"
#include "median_math.hpp"

namespace s3d::stereo::detail::cpu {

void speckle(float* disp, int width, int height, int max_size, float max_diff, int* scratch) {
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(width) * height;
  int* label = scratch;  // 0 = unvisited
  int* stack = scratch + n;
  for (std::ptrdiff_t i = 0; i < n; ++i) label[i] = 0;
  const double inv_width = 1.0 / width;
  for (std::ptrdiff_t start = 0; start < n; ++start) {
    if (label[start] || !finite_disparity(disp[start])) continue;
    // flood fill the region of `start`
    std::ptrdiff_t top = 0, count = 0;
    stack[top++] = static_cast<int>(start);
    label[start] = 1;
    // collect pixels in visit order (reuse the stack tail as the region list)
    std::ptrdiff_t head = 0;
    while (head < top) {
      const int p = stack[head++];
      ++count;
      // p / width without a division (exact: corrected by one step either way)
      int py = static_cast<int>(static_cast<double>(p) * inv_width);
      if (py * width > p)
        --py;
      else if ((py + 1) * width <= p)
        ++py;
      const int px = p - py * width;
      const float d = disp[p];
      const int nb[4] = {px > 0 ? p - 1 : -1, px < width - 1 ? p + 1 : -1, py > 0 ? p - width : -1,
                         py < height - 1 ? p + width : -1};
      for (int q : nb) {
        if (q < 0 || label[q] || !finite_disparity(disp[q])) continue;
        const float e = disp[q];
        if ((d > e ? d - e : e - d) <= max_diff) {
          label[q] = 1;
          stack[top++] = q;
        }
      }
    }
    if (count <= max_size) {
      for (std::ptrdiff_t k = 0; k < top; ++k) disp[stack[k]] = kInvalidDisparity;
      // keep them labelled so they are not revisited (their disparity is now invalid anyway)
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
