#pragma once
// Census transform of one pixel, shared by the CPU and CUDA backends (S3D_HOST_DEVICE).
// Zabih & Woodfill (ECCV 1994); the centre-symmetric variant compares each pixel with its mirror through
// the centre (Spangenberg et al., 2013), halving the bits at similar accuracy.
#include <cstdint>

#include "s3d/core/host_device.hpp"
#include "s3d/core/views.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::stereo::detail {

S3D_HOST_DEVICE S3D_FORCEINLINE int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/// Code of pixel (x, y). Bits in raster order of the window (first compared pair = most significant bit).
/// Full: bit = (pixel < centre) for every non-centre pixel. Centre-symmetric: bit = (p_i < p_{n-1-i}) for
/// the first half of the window in raster order. Coordinates outside the image are clamped (replicated border).
template <typename T>
S3D_HOST_DEVICE inline std::uint64_t census_at(ImageView<const T> image, int x, int y, bool center_symmetric,
                                               int window_width, int window_height) {
  const int rx = window_width / 2;
  const int ry = window_height / 2;
  std::uint64_t code = 0;
  if (!center_symmetric) {
    const T c = image(x, y);
    for (int dy = -ry; dy <= ry; ++dy) {
      const T* row = image.row(clamp_int(y + dy, 0, image.height - 1));
      for (int dx = -rx; dx <= rx; ++dx) {
        if (dx == 0 && dy == 0) continue;
        const T p = row[clamp_int(x + dx, 0, image.width - 1)];
        code = (code << 1) | static_cast<std::uint64_t>(p < c);
      }
    }
  } else {
    const int n = window_width * window_height;
    for (int i = 0; i < n / 2; ++i) {
      const int dy = i / window_width - ry;
      const int dx = i % window_width - rx;
      // mirror of (dx, dy) is (-dx, -dy): index n-1-i
      const T a = image(clamp_int(x + dx, 0, image.width - 1), clamp_int(y + dy, 0, image.height - 1));
      const T b = image(clamp_int(x - dx, 0, image.width - 1), clamp_int(y - dy, 0, image.height - 1));
      code = (code << 1) | static_cast<std::uint64_t>(a < b);
    }
  }
  return code;
}

}  // namespace s3d::stereo::detail
