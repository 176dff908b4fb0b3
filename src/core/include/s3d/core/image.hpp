#pragma once
// A host image that owns its pixels: what engines return and readers produce. Kernels and CPU loops take
// its non-owning `view()`.
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "s3d/core/views.hpp"

namespace s3d {

/// The one marker for "no value" in float images (disparity, depth): +infinity. Writers also treat any
/// other non-finite value (NaN, -inf) as invalid.
inline constexpr float kInvalid = std::numeric_limits<float>::infinity();
/// True for a usable value: finite (kInvalid, NaN and -inf are not).
inline bool is_valid(float value) { return std::isfinite(value); }

/// A dense host image of `channels` interleaved samples of T per pixel, row-major, top row first.
template <typename T>
struct Image {
  int width = 0;
  int height = 0;
  int channels = 1;
  std::vector<T> data;  ///< width * height * channels samples

  Image() = default;
  Image(int w, int h, int c = 1, T fill = T{})
      : width(w), height(h), channels(c), data(static_cast<std::size_t>(w) * h * c, fill) {}

  bool empty() const { return width <= 0 || height <= 0; }
  std::size_t pixels() const { return static_cast<std::size_t>(width) * height; }
  /// Sample `c` of pixel (x, y); no bounds check.
  T& at(int x, int y, int c = 0) { return data[(static_cast<std::size_t>(y) * width + x) * channels + c]; }
  const T& at(int x, int y, int c = 0) const { return data[(static_cast<std::size_t>(y) * width + x) * channels + c]; }
  /// A non-owning view (single-channel images only: pitch = width); valid while the image lives unresized.
  ImageView<const T> view() const { return ImageView<const T>{data.data(), width, height, width}; }
  ImageView<T> view() { return ImageView<T>{data.data(), width, height, width}; }
  /// The read-only view, also from a non-const image.
  ImageView<const T> cview() const { return view(); }
};

}  // namespace s3d
