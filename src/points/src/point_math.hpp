#pragma once
// Per-point math shared by the CPU and CUDA backends (S3D_HOST_DEVICE, no FMA contraction on either side),
// so that every discrete result (FPS picks, neighbour sets) is bit-identical between them.
#include <cstdint>
#include <cstring>

#include "s3d/core/host_device.hpp"

namespace s3d::points::detail {

/// Squared distance in the documented order: ((dx*dx)+(dy*dy))+(dz*dz).
S3D_HOST_DEVICE inline float squared_distance(float ax, float ay, float az, float bx, float by, float bz) {
  const float dx = ax - bx;
  const float dy = ay - by;
  const float dz = az - bz;
  return ((dx * dx) + (dy * dy)) + (dz * dz);
}

S3D_HOST_DEVICE inline std::uint32_t float_bits(float v) {
#ifdef __CUDA_ARCH__
  return static_cast<std::uint32_t>(__float_as_uint(v));
#else
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
#endif
}

/// The FPS arg-max key: non-negative floats order like their bit patterns, so the largest key is the largest
/// distance and, among equal distances, the smallest index. One 64-bit max reduces both at once.
S3D_HOST_DEVICE inline std::uint64_t fps_key(float distance, std::uint32_t index) {
  return (static_cast<std::uint64_t>(float_bits(distance)) << 32) | (0xFFFFFFFFu - index);
}
S3D_HOST_DEVICE inline std::uint32_t fps_key_index(std::uint64_t key) {
  return 0xFFFFFFFFu - static_cast<std::uint32_t>(key & 0xFFFFFFFFu);
}

/// The neighbour order: smaller squared distance first, then smaller index.
S3D_HOST_DEVICE inline bool neighbor_before(float d2a, std::int32_t ia, float d2b, std::int32_t ib) {
  return d2a < d2b || (d2a == d2b && ia < ib);
}

}  // namespace s3d::points::detail
