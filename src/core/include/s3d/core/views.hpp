#pragma once
// Non-owning, trivially copyable views passed to kernels by value (CPU and CUDA alike), like
// cuCollections' device refs: a view never allocates or frees, and whether its pointer addresses host or
// device memory is the caller's contract (each function taking one says which). Views are cheap to copy
// into a kernel's parameter space and carry no CUDA types, so public headers can use them.
#include <cstddef>
#include <cstdint>

#include "s3d/core/host_device.hpp"

namespace s3d {

/// A 2-D image of T in row-major order with a row pitch in elements (pitch >= width), so padded
/// allocations and sub-images are views too. Memory is owned elsewhere and must outlive the view.
template <typename T>
struct ImageView {
  T* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t pitch = 0;  ///< elements between the starts of two rows

  /// Start of row `y` (0 <= y < height); no bounds check, here or in operator().
  S3D_HOST_DEVICE T* row(int y) const { return data + static_cast<std::ptrdiff_t>(y) * pitch; }
  S3D_HOST_DEVICE T& operator()(int x, int y) const { return row(y)[x]; }
  S3D_HOST_DEVICE bool empty() const { return width <= 0 || height <= 0; }
  S3D_HOST_DEVICE std::size_t pixels() const { return static_cast<std::size_t>(width) * height; }
};

/// Makes a dense (pitch == width) view of `width`·`height` elements at `data`.
template <typename T>
S3D_HOST_DEVICE inline ImageView<T> make_image_view(T* data, int width, int height) {
  return ImageView<T>{data, width, height, width};
}

/// A 1-D span of `size` elements at `data` (host or device, as the taker documents), for kernels.
template <typename T>
struct Span {
  T* data = nullptr;
  std::size_t size = 0;
  S3D_HOST_DEVICE T& operator[](std::size_t i) const { return data[i]; }
};

/// `size` points of 3 interleaved coordinates (x y z, 12 bytes apart for float) at `xyz`, host or device
/// as the taker documents. What point kernels take; `PointCloud::view()` makes one.
template <typename T>
struct PointsView {
  T* xyz = nullptr;
  std::size_t size = 0;
  S3D_HOST_DEVICE T* point(std::size_t i) const { return xyz + 3 * i; }
  S3D_HOST_DEVICE bool empty() const { return size == 0; }
};

}  // namespace s3d
