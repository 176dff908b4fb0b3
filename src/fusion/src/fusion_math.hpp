#pragma once
// Internal: small vector math written once for the CPU backend and the CUDA kernels (S3D_HOST_DEVICE).
// Every expression is spelled out in a fixed order and the project builds without FMA contraction, so both
// backends round identically. No CUDA types here; transcendental functions are not used in per-pixel math
// unless both sides call the same implementation from this file (libm and CUDA's differ in the last bit).
#include <cmath>

#include "s3d/core/host_device.hpp"

namespace s3d::fusion::detail {

struct Vec3f {
  float x, y, z;
};

S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f operator+(Vec3f a, Vec3f b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f operator-(Vec3f a, Vec3f b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f operator*(float s, Vec3f a) { return {s * a.x, s * a.y, s * a.z}; }
S3D_HOST_DEVICE S3D_FORCEINLINE float dot(Vec3f a, Vec3f b) { return ((a.x * b.x) + (a.y * b.y)) + (a.z * b.z); }
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f cross(Vec3f a, Vec3f b) {
  return {(a.y * b.z) - (a.z * b.y), (a.z * b.x) - (a.x * b.z), (a.x * b.y) - (a.y * b.x)};
}
S3D_HOST_DEVICE S3D_FORCEINLINE float squared_norm(Vec3f a) { return dot(a, a); }
/// Invalid map entries have x = NaN.
S3D_HOST_DEVICE S3D_FORCEINLINE bool is_valid(Vec3f a) { return a.x == a.x; }
S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f invalid_vec3() { return {NAN, NAN, NAN}; }

/// A rigid transform in float for kernels: p' = R p + t, R row-major.
struct Rigid {
  float r[9];
  float t[3];
  S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f rotate(Vec3f p) const {
    return {((r[0] * p.x) + (r[1] * p.y)) + (r[2] * p.z), ((r[3] * p.x) + (r[4] * p.y)) + (r[5] * p.z),
            ((r[6] * p.x) + (r[7] * p.y)) + (r[8] * p.z)};
  }
  S3D_HOST_DEVICE S3D_FORCEINLINE Vec3f apply(Vec3f p) const {
    const Vec3f q = rotate(p);
    return {q.x + t[0], q.y + t[1], q.z + t[2]};
  }
};

}  // namespace s3d::fusion::detail
