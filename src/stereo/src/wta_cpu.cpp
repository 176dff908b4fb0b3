// Winner-take-all (+ uniqueness, parabola subpixel, confidence), CPU backend. Ties go to the smallest d.
#include <algorithm>
#include <climits>
#include <vector>

#include "backend.hpp"
#include "s3d/core/cpu_dispatch.hpp"
#include "wta_cpu.hpp"
#include "wta_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

/// Best (lowest cost, then lowest d) over [0, D) from packed (cost << 16 | d) keys, and the costs summed
/// from A (+ B) into `s`. Returns the packed key.
S3D_CPU_CLONES
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
        const std::uint32_t key = sum_and_best(sum.data(), volume + i * D, volume_b ? volume_b + i * D : nullptr, D);
        wta_pixel(sum.data(), static_cast<int>(key & 0xffffu), static_cast<int>(key >> 16), x, spec,
                  disparity + static_cast<std::ptrdiff_t>(y) * W,
                  confidence ? confidence + static_cast<std::ptrdiff_t>(y) * W : nullptr);
      }
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
