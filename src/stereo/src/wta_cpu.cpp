// Winner-take-all (+ uniqueness, parabola subpixel, confidence), CPU backend. Ties go to the smallest d.
#include <algorithm>
#include <climits>

#include "backend.hpp"
#include "cpu_simd.hpp"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

S3D_STEREO_CLONES
int min_of(const std::uint16_t* __restrict s, int begin, int end) {
  int m = INT_MAX;
  for (int d = begin; d < end; ++d) m = std::min<int>(m, s[d]);
  return m;
}

}  // namespace

void wta(const std::uint16_t* volume, const MatchSpec& spec, float* disparity, float* confidence) {
  const int W = spec.width;
  const int D = spec.disparities;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < spec.height; ++y) {
    for (int x = 0; x < W; ++x) {
      const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(y) * W + x;
      const std::uint16_t* s = volume + i * D;
      const int best_cost = min_of(s, 0, D);
      int best = 0;
      while (s[best] != best_cost) ++best;
      const int second = std::min(min_of(s, 0, std::max(best - 1, 0)), min_of(s, std::min(best + 2, D), D));
      const bool ok = target_inside(x, best, spec.min_disparity, spec.sign, W) &&
                      passes_uniqueness(best_cost, second, spec.uniqueness);
      if (ok) {
        const int sm = best > 0 ? s[best - 1] : 0;
        const int sp = best < D - 1 ? s[best + 1] : 0;
        disparity[i] = wta_disparity(best, D, spec.min_disparity, spec.subpixel, sm, best_cost, sp);
      } else {
        disparity[i] = kInvalidDisparity;
      }
      if (confidence) confidence[i] = ok ? wta_confidence(best_cost, second) : 0.0f;
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
