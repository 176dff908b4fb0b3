// Census transform, CPU backend (OpenMP over rows).
#include "backend.hpp"
#include "census_math.hpp"

namespace s3d::stereo::detail::cpu {

template <typename T>
void census(ImageView<const T> image, CensusSpec spec, std::uint64_t* out) {
  const bool cs = spec.kind == CensusKind::kCenterSymmetric;
  const int w = image.width;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < image.height; ++y) {
    std::uint64_t* row = out + static_cast<std::ptrdiff_t>(y) * w;
    for (int x = 0; x < w; ++x) row[x] = census_at(image, x, y, cs, spec.width, spec.height);
  }
}

template void census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec, std::uint64_t*);
template void census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec, std::uint64_t*);

}  // namespace s3d::stereo::detail::cpu
