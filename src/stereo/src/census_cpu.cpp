// Census transform, CPU backend (OpenMP over rows). Per row, the window offsets are the outer loop and the
// pixels the inner one, so the interior loop (no clamping) vectorises over x; the bit order is the same as
// census_at() (shared with CUDA), which the few border pixels use directly. Comparisons are gathered eight
// at a time into a byte per pixel (narrow vector lanes), then shifted into the 64-bit codes.
#include <algorithm>
#include <vector>

#include "backend.hpp"
#include "census_math.hpp"
#include "s3d/core/cpu_dispatch.hpp"

namespace s3d::stereo::detail::cpu {
namespace {

/// bits[i] = (bits[i] << 1) | (a[i] < b[i]): one comparison of the window into a byte per pixel (narrow
/// lanes: 32 or 64 pixels per vector op).
template <typename T>
S3D_CPU_CLONES void shift_in8(std::uint8_t* __restrict bits, const T* __restrict a, const T* __restrict b, int n) {
  for (int i = 0; i < n; ++i)
    bits[i] = static_cast<std::uint8_t>((bits[i] << 1) | static_cast<std::uint8_t>(a[i] < b[i]));
}

/// code[i] = (code[i] << k) | bits[i]: up to 8 comparisons at once into the 64-bit codes (same bit order
/// as shifting them in one by one).
S3D_CPU_CLONES void merge_bits(std::uint64_t* __restrict code, const std::uint8_t* __restrict bits, int k, int n) {
  for (int i = 0; i < n; ++i) code[i] = (code[i] << k) | static_cast<std::uint64_t>(bits[i]);
}

}  // namespace

template <typename T>
void census(ImageView<const T> image, CensusSpec spec, std::uint64_t* out) {
  const bool cs = spec.kind == CensusKind::kCenterSymmetric;
  const int w = image.width, h = image.height;
  const int rx = spec.width / 2, ry = spec.height / 2;
  const int x_lo = std::min(rx, w), x_hi = std::max(w - rx, x_lo);  // interior columns [x_lo, x_hi)
  // the compared pairs in bit order (most significant first), the centre skipped for the full census
  struct Pair {
    int dx, dy;
  };
  std::vector<Pair> pairs;
  const int count = spec.width * spec.height;
  for (int i = 0; i < (cs ? count / 2 : count); ++i) {
    const int dy = i / spec.width - ry, dx = i % spec.width - rx;
    if (!cs && dx == 0 && dy == 0) continue;
    pairs.push_back({dx, dy});
  }
  const int npairs = static_cast<int>(pairs.size());
#pragma omp parallel
  {
    std::vector<std::uint8_t> bits(static_cast<std::size_t>(std::max(x_hi - x_lo, 0)));
#pragma omp for schedule(static)
    for (int y = 0; y < h; ++y) {
      std::uint64_t* row = out + static_cast<std::ptrdiff_t>(y) * w;
      const int n = x_hi - x_lo;
      if (n > 0) {
        std::uint64_t* code = row + x_lo;
        std::fill(code, code + n, std::uint64_t{0});
        const T* center = image.row(y) + x_lo;
        for (int g = 0; g < npairs; g += 8) {
          const int k = std::min(8, npairs - g);
          std::fill(bits.begin(), bits.end(), std::uint8_t{0});
          for (int j = g; j < g + k; ++j) {
            const int dy = pairs[j].dy, dx = pairs[j].dx;
            const T* a = image.row(clamp_int(y + dy, 0, h - 1)) + x_lo + dx;
            const T* b = cs ? image.row(clamp_int(y - dy, 0, h - 1)) + x_lo - dx : center;
            shift_in8(bits.data(), a, b, n);
          }
          merge_bits(code, bits.data(), k, n);
        }
      }
      for (int x = 0; x < x_lo; ++x) row[x] = census_at(image, x, y, cs, spec.width, spec.height);
      for (int x = x_hi; x < w; ++x) row[x] = census_at(image, x, y, cs, spec.width, spec.height);
    }
  }
}

template void census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec, std::uint64_t*);
template void census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec, std::uint64_t*);

}  // namespace s3d::stereo::detail::cpu
