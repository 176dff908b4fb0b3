// 3x3 median over valid pixels, CPU backend.
// Interior pixels whose whole window is valid (the common case) take a branch-free min/max network over a
// row, which vectorises; the others go through median3x3_at() (shared with CUDA). Both return the 5th
// smallest of the same nine values (the network only compares and copies), so the result is bit-identical.
#include <algorithm>
#include <vector>

#include "backend.hpp"
#include "cpu_simd.hpp"
#include "median_math.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

inline void sort2(float& a, float& b) {
  const float lo = std::min(a, b), hi = std::max(a, b);
  a = lo;
  b = hi;
}

/// Median of 9 (the classic 19-exchange network, Paeth / Devillard's opt_med9).
inline float median9(float p0, float p1, float p2, float p3, float p4, float p5, float p6, float p7, float p8) {
  sort2(p1, p2); sort2(p4, p5); sort2(p7, p8);
  sort2(p0, p1); sort2(p3, p4); sort2(p6, p7);
  sort2(p1, p2); sort2(p4, p5); sort2(p7, p8);
  sort2(p0, p3); sort2(p5, p8); sort2(p4, p7);
  sort2(p3, p6); sort2(p1, p4); sort2(p2, p5);
  sort2(p4, p7); sort2(p4, p2); sort2(p6, p4);
  sort2(p4, p2);
  return p4;
}

/// out[x] for x in [1, width-1) of an interior row: the network's median, and a flag whether the
/// window was entirely valid (else the caller recomputes that pixel).
S3D_STEREO_CLONES
void median_row(const float* __restrict a, const float* __restrict b, const float* __restrict c, float* __restrict out,
                unsigned char* __restrict all_valid, int width) {
  for (int x = 1; x < width - 1; ++x) {
    out[x] = median9(a[x - 1], a[x], a[x + 1], b[x - 1], b[x], b[x + 1], c[x - 1], c[x], c[x + 1]);
    // finite_disparity() of all nine, as a product of 0/1 flags (branch-free)
    int ok = 1;
    const float v[9] = {a[x - 1], a[x], a[x + 1], b[x - 1], b[x], b[x + 1], c[x - 1], c[x], c[x + 1]};
    for (float e : v) ok &= static_cast<int>(e < 3.0e38f) & static_cast<int>(e > -3.0e38f);
    all_valid[x] = static_cast<unsigned char>(ok);
  }
}

}  // namespace

void median3x3(const float* in, float* out, int width, int height) {
#pragma omp parallel
  {
    std::vector<unsigned char> flags(static_cast<std::size_t>(width));
#pragma omp for schedule(static)
    for (int y = 0; y < height; ++y) {
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(y) * width;
      if (y > 0 && y < height - 1 && width > 2) {
        median_row(in + row - width, in + row, in + row + width, out + row, flags.data(), width);
        for (int x = 1; x < width - 1; ++x) {
          if (flags[x]) continue;
          const std::ptrdiff_t i = row + x;
          out[i] = finite_disparity(in[i]) ? median3x3_at(in, width, x, y, width, height) : in[i];
        }
        for (int x : {0, width - 1}) {
          const std::ptrdiff_t i = row + x;
          out[i] = finite_disparity(in[i]) ? median3x3_at(in, width, x, y, width, height) : in[i];
        }
      } else {
        for (int x = 0; x < width; ++x) {
          const std::ptrdiff_t i = row + x;
          out[i] = finite_disparity(in[i]) ? median3x3_at(in, width, x, y, width, height) : in[i];
        }
      }
    }
  }
}

}  // namespace s3d::stereo::detail::cpu
