#pragma once
// Internal: the rulebook geometry both backends share (integer only): linear keys, the output grid, and
// which input an output reads at a kernel offset.
#include <cstdint>

#include "s3d/core/host_device.hpp"

namespace s3d::points::detail {

/// One layer's validated geometry, per axis (z, y, x).
struct ConvGeometry {
  std::int64_t in_shape[3];
  std::int64_t out_shape[3];
  std::int32_t kernel[3];
  std::int32_t stride[3];
  std::int32_t padding[3];
  std::int32_t dilation[3];
  std::int32_t batch_size;
  std::int32_t kernel_volume;
};

/// ((b * Z + z) * Y + y) * X + x.
S3D_HOST_DEVICE S3D_FORCEINLINE std::uint64_t linear_key(const std::int64_t shape[3], std::int32_t b, std::int32_t z,
                                                         std::int32_t y, std::int32_t x) {
  return static_cast<std::uint64_t>(((b * shape[0] + z) * shape[1] + y) * shape[2] + x);
}

/// The inverse of linear_key: (b, z, y, x).
S3D_HOST_DEVICE S3D_FORCEINLINE void decode_key(std::uint64_t key, const std::int64_t shape[3], std::int32_t out[4]) {
  const std::uint64_t x = key % static_cast<std::uint64_t>(shape[2]);
  key /= static_cast<std::uint64_t>(shape[2]);
  const std::uint64_t y = key % static_cast<std::uint64_t>(shape[1]);
  key /= static_cast<std::uint64_t>(shape[1]);
  const std::uint64_t z = key % static_cast<std::uint64_t>(shape[0]);
  out[0] = static_cast<std::int32_t>(key / static_cast<std::uint64_t>(shape[0]));
  out[1] = static_cast<std::int32_t>(z);
  out[2] = static_cast<std::int32_t>(y);
  out[3] = static_cast<std::int32_t>(x);
}

/// Kernel offset k's per-axis taps (kz, ky, kx).
S3D_HOST_DEVICE S3D_FORCEINLINE void offset_taps(const ConvGeometry& g, int k, int taps[3]) {
  taps[2] = k % g.kernel[2];
  k /= g.kernel[2];
  taps[1] = k % g.kernel[1];
  taps[0] = k / g.kernel[1];
}

/// The input cell output `o` (z, y, x) reads at offset `k`: i = o * s - p + tap * d; false outside the input grid.
S3D_HOST_DEVICE S3D_FORCEINLINE bool input_at(const ConvGeometry& g, const std::int32_t o[3], int k,
                                              std::int32_t in[3]) {
  int taps[3];
  offset_taps(g, k, taps);
  for (int a = 0; a < 3; ++a) {
    const std::int64_t i = static_cast<std::int64_t>(o[a]) * g.stride[a] - g.padding[a] +
                           static_cast<std::int64_t>(taps[a]) * g.dilation[a];
    if (i < 0 || i >= g.in_shape[a]) return false;
    in[a] = static_cast<std::int32_t>(i);
  }
  return true;
}

/// The output cell input `i` reaches at offset `k`: o = (i + p - tap * d) / s when that divides and lies inside
/// the output grid.
S3D_HOST_DEVICE S3D_FORCEINLINE bool output_at(const ConvGeometry& g, const std::int32_t i[3], int k,
                                               std::int32_t out[3]) {
  int taps[3];
  offset_taps(g, k, taps);
  for (int a = 0; a < 3; ++a) {
    const std::int64_t t =
        static_cast<std::int64_t>(i[a]) + g.padding[a] - static_cast<std::int64_t>(taps[a]) * g.dilation[a];
    if (t < 0 || t % g.stride[a] != 0) return false;
    const std::int64_t o = t / g.stride[a];
    if (o >= g.out_shape[a]) return false;
    out[a] = static_cast<std::int32_t>(o);
  }
  return true;
}

/// Murmur3's 64-bit finaliser: spreads neighbouring linear keys over the table.
S3D_HOST_DEVICE S3D_FORCEINLINE std::uint64_t mix_key(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

}  // namespace s3d::points::detail
