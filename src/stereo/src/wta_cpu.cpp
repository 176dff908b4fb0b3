// Winner-take-all (+ uniqueness, parabola subpixel, confidence), CPU backend. Ties go to the smallest d.
#include <algorithm>
#include <climits>
#include <vector>

#include "backend.hpp"
#include "cpu_simd.hpp"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

/// Best (lowest cost, then lowest d) over [0, D) from packed (cost << 16 | d) keys, and the costs summed
/// from A (+ B) into `s`. Returns the packed key.
S3D_STEREO_CLONES
std::uint32_t sum_and_best(std::uint16_t* __restrict s, const std::uint16_t* __restrict a,
                           const std::uint16_t* __restrict b, int D) {
  std::uint32_t best = 0xffffffffu;
  if (b) {
    for (int d = 0; d < D; ++d) {
      const std::uint16_t v = static_cast<std::uint16_t>(a[d] + b[d]);
      s[d] = v;
      best = std::min(best, (static_cast<std::uint32_t>(v) << 16) | static_cast<std::uint32_t>(d));
    }
  } else {
    for (int d = 0; d < D; ++d) {
      s[d] = a[d];
      best = std::min(best, (static_cast<std::uint32_t>(a[d]) << 16) | static_cast<std::uint32_t>(d));
    }
  }
  return best;
}

S3D_STEREO_CLONES
int min_of(const std::uint16_t* __restrict s, int begin, int end) {
  std::uint16_t m = 0xffff;
  bool any = false;
  for (int d = begin; d < end; ++d) {
    m = std::min(m, s[d]);
    any = true;
  }
  return any ? m : INT_MAX;
}

}  // namespace

void wta(const std::uint16_t* volume, const std::uint16_t* volume_b, const MatchSpec& spec, float* disparity,
         float* confidence) {
  const int W = spec.width;
  const int D = spec.disparities;  // <= 1024 < 2^16: fits the packed key
#pragma omp parallel
  {
    std::vector<std::uint16_t> sum(D);
#pragma omp for schedule(static)
    for (int y = 0; y < spec.height; ++y) {
      for (int x = 0; x < W; ++x) {
        const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(y) * W + x;
        const std::uint32_t key =
            sum_and_best(sum.data(), volume + i * D, volume_b ? volume_b + i * D : nullptr, D);
        const std::uint16_t* s = sum.data();
        const int best = static_cast<int>(key & 0xffffu);
        const int best_cost = static_cast<int>(key >> 16);
        // the second best is only needed for the uniqueness test and the confidence
        const int second = (spec.uniqueness > 0 || confidence)
                               ? std::min(min_of(s, 0, std::max(best - 1, 0)), min_of(s, std::min(best + 2, D), D))
                               : INT_MAX;
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
}

}  // namespace s3d::stereo::detail::cpu
