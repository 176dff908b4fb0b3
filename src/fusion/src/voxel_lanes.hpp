#pragma once
// Internal: what the CPU's 8-lane AVX2 loops (integrate_lanes.cpp, raycast_lanes.cpp) share. Everything here is
// AVX2 code, only ever called from those loops, where the CPU has it.
#include "s3d/core/cpu_dispatch.hpp"
#include "tsdf_math.hpp"

#if S3D_AVX2_REGION
#include <immintrin.h>

S3D_AVX2_REGION_BEGIN
namespace s3d::fusion::detail::lanes {

constexpr int kLanes = 8;

inline __m256 set(float v) { return _mm256_set1_ps(v); }

/// first, first + 1, ..., first + 7.
inline __m256i iota(int first) {
  return _mm256_add_epi32(_mm256_set1_epi32(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// tsdf_value of the 8 stored words {int16 tsdf, int16 weight} (the tsdf is the low half).
inline __m256 tsdf_of_words(__m256i word) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(_mm256_slli_epi32(word, 16), 16)), set(kInvTsdfScale));
}

}  // namespace s3d::fusion::detail::lanes
S3D_AVX2_REGION_END
#endif
