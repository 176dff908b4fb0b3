// 3x3 median over valid pixels, CPU backend.
// Interior pixels take a branch-free rank selection over a row, which vectorises; the border ones go through
// median3x3_at() (shared with CUDA). Both return the (n/2)-th smallest valid value of the window.
#include <algorithm>
#include <limits>
#include <vector>

#include "backend.hpp"
#include "median_math.hpp"
#include "s3d/core/cpu_dispatch.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

/// out[x] for x in [1, width-1) of an interior row, every window (partly invalid ones too) branch-free:
/// invalid values become +inf, and the result is the value of rank n/2 among the nine (n = valid count),
/// ranks taken by value then by window position (a permutation of 0..8). That is the (n/2)-th smallest
/// valid value, as median3x3_at() picks it; comparisons and copies only, so bit-identical.
S3D_CPU_CLONES
void median_row(const float* __restrict a, const float* __restrict b, const float* __restrict c, float* __restrict out,
                int width) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int x = 1; x < width - 1; ++x) {
    const float v[9] = {a[x - 1], a[x], a[x + 1], b[x - 1], b[x], b[x + 1], c[x - 1], c[x], c[x + 1]};
    float w[9];
    int n = 0;
    for (int i = 0; i < 9; ++i) {
      const bool ok = v[i] < 3.0e38f && v[i] > -3.0e38f;  // finite_disparity()
      n += ok;
      w[i] = ok ? v[i] : kInf;
    }
    // rank[j]: how many values come before w[j]; of a pair i < j, i comes first when w[i] <= w[j] (a tie goes
    // by position), else j. One comparison a pair (36), not one a rank term (81).
    int rank[9] = {};
#pragma GCC unroll 9
    for (int j = 1; j < 9; ++j)
#pragma GCC unroll 9
      for (int i = 0; i < j; ++i) {
        const int i_first = w[i] <= w[j];
        rank[j] += i_first;
        rank[i] += 1 - i_first;
      }
    const int k = n >> 1;
    float result = b[x];
    for (int j = 0; j < 9; ++j) result = rank[j] == k ? w[j] : result;
    const bool centre_ok = b[x] < 3.0e38f && b[x] > -3.0e38f;
    out[x] = centre_ok ? result : b[x];
  }
}

}  // namespace

void median3x3(const float* in, float* out, int width, int height) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(y) * width;
    if (y > 0 && y < height - 1 && width > 2) {
      median_row(in + row - width, in + row, in + row + width, out + row, width);
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

}  // namespace s3d::stereo::detail::cpu
