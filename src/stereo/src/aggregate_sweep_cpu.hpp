#pragma once
// Internal (CPU backend): what the cost volume, the generic sweep and the AVX-512 byte sweep share: the
// run-time instruction-set dispatch, a sweep's buffers and the fused winner-take-all's meeting point.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "s3d/core/cpu_dispatch.hpp"
#include "wta_cpu.hpp"

// The hot loops of the CPU aggregation are compiled for AVX-512 (BW / VPOPCNTDQ), AVX2 (POPCNT) and baseline
// x86-64 and picked at run time by CPU feature (GCC's target_clones cannot name these AVX-512 subsets).
// Integer math: every variant gives the same results.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define S3D_AGG_DISPATCH 1
#define S3D_TARGET(isa) __attribute__((target(isa)))
#else
#define S3D_AGG_DISPATCH 0
#define S3D_TARGET(isa)
#endif

namespace s3d::stereo::detail::cpu {

/// Buffers of one sweep: per path, the previous and current rows of L (D+2 per pixel, sentinels at both
/// ends) and their minima; the horizontal path's L for the whole row (same layout).
struct SweepBuffers {
  std::vector<std::uint16_t> rows;  // [2][paths][W][D+2]
  std::vector<int> mins;            // [2][paths][W]
  std::vector<std::uint16_t> hrow;  // [W][D+2]
  std::vector<std::uint8_t> rows8;  // the same two with byte rows (use_byte_rows())
  std::vector<std::uint8_t> hrow8;
  std::vector<std::uint16_t> sums;                // [W][D]: this row's sums (fused winner-take-all)
  std::vector<std::uint16_t> total;               // [D]
  std::vector<std::uint16_t> right_sum, right_d;  // [W + D - 1]: this row's right view (Meet::right_disparity)
};

/// Fused winner-take-all of the two sweeps: they walk the rows in opposite orders and meet in the middle.
/// For each row, the first sweep to finish it stores its sums in `volume`; the second adds its own to them
/// and takes the winner at once, so each row of sums is written once and read once (instead of two volumes
/// written and both read again by a separate pass).
struct Meet {
  std::unique_ptr<std::atomic<int>[]> arrivals;  ///< per row: sweeps that finished it
  std::unique_ptr<std::atomic<int>[]> stored;    ///< per row: 1 once the first sweep's sums are in `volume`
  std::uint16_t* volume = nullptr;
  float* disparity = nullptr;
  float* confidence = nullptr;
  float* right_disparity = nullptr;  ///< also the right view's disparities from the sums (LrMethod::kVolume)
};

/// The row buffers of the right view, reset for a new row (empty when the right view is not wanted).
RightRow start_right_row(const Meet& meet, const MatchSpec& spec, SweepBuffers& b);

/// One sweep (aggregate_sweep_cpu.cpp): rows in direction dy, horizontal path hdx, sums assigned to `out`
/// (or met in `meet`).
using SweepFn = void (*)(const std::uint8_t*, const MatchSpec&, int, int, std::uint16_t*, SweepBuffers&, Meet*);

/// The AVX-512 byte sweep for `disparities` (aggregate_sweep_avx512_cpu.cpp) when this CPU and build have it
/// and D is 64, 128 or 256; nullptr otherwise. Valid only for byte rows (the caller checks).
SweepFn avx512_byte_sweep(int disparities);

}  // namespace s3d::stereo::detail::cpu
