#pragma once
// The most common binary point record, float x y z then uchar red green blue (15 bytes), split into
// positions and three colour columns with SIMD shuffles: the generic per-column copy of ply_read.cpp costs
// about 10 cycles a point on such records, several times what reading the file costs.
#include <cstdint>

namespace s3d::io::detail {

/// Splits the first records of `count` 15-byte records at `in` (x y z r g b, already in host byte order)
/// into `xyz` (12 bytes a point) and `red`, `green`, `blue` (one byte a point). Returns how many it did: a
/// multiple of 16, always leaving the last record (its 16-byte load would run past the data), and 0 where
/// the AVX2 variant does not run (no AVX2, S3D_CPU_ISA=baseline, not x86-64); the caller copies the rest.
std::uint64_t split_xyz_rgb_records(const std::uint8_t* in, std::uint64_t count, std::uint8_t* xyz, std::uint8_t* red,
                                    std::uint8_t* green, std::uint8_t* blue);

}  // namespace s3d::io::detail
