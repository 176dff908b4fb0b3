#pragma once
// Internal (CUDA backend): the per-path uint8 aggregation pipeline used by the engine whenever every path
// cost fits a byte (max_cost + p2 <= 255, which the recurrence bounds L_r by; see aggregate_math.hpp).
// All path directions run in ONE launch (blockIdx.y = direction), each writing its own uint8 volume
// [direction][y][x][pitch] with 16-byte stores (no read-modify-write, no ordering between directions);
// the WTA sums the directions' bytes on the fly (<= 8 * 255 fits any int), so the decisions equal the
// CPU's, which sums the same L_r in uint16. Host functions queue work on `stream` and never synchronize.
#include <cstddef>
#include <cstdint>

#include "backend.hpp"

namespace s3d::stereo::detail::cuda {

/// Lane layout of the cost-volume variant's path kernel: kWide = 16 disparities per lane in every direction;
/// kNarrowHorizontal = the horizontal directions (the W-step chains) with 4 disparities per lane (8 / 16 for
/// D > 128 / 256: a scanline is at most one warp), costs prefetched 8 steps ahead; kNarrowAll = every
/// direction so. Same bytes either way (an experiment knob for bench_sgm and the tests).
enum class PerPathLanes { kWide = 0, kNarrowHorizontal = 1, kNarrowAll = 2, kDefault = 3 };
/// What kDefault (the engine) picks for `spec`: kNarrowAll since the narrow scans stage their costs through
/// shared memory and step branch-free on packed 16x2 pairs (bench_sgm's stage table, H100: fastest of the
/// three at every benchmark size, e.g. 1024x440 D128 4 paths 0.29 ms vs 0.39 / 0.65).
PerPathLanes default_per_path_lanes(const MatchSpec& spec);

/// True when the per-path pipeline applies: automatic lane layout (spec.lanes == 0), D <= 512 and
/// max_cost + p2 <= 255.
bool per_path_fits(const MatchSpec& spec);
/// Bytes per pixel of one direction's volume: D rounded up to 16 * a power of two (one 16-byte lane each).
int per_path_pitch(int disparities);
/// Bytes of all directions' volumes: paths * width * height * per_path_pitch(D).
std::size_t per_path_bytes(const MatchSpec& spec);
/// Bytes of the matching-cost volume of the cost-volume variant: width * height * per_path_pitch(D).
std::size_t per_path_cost_bytes(const MatchSpec& spec);
/// Aggregates every direction of `spec` into `d_paths` (per_path_bytes(spec) bytes). With `d_cost`
/// (per_path_cost_bytes(spec) bytes, scratch) the costs are computed once into it and each direction reads
/// them; with null every direction recomputes them from the census codes (same result either way; `lanes`
/// applies to the cost-volume variant).
void aggregate_per_path(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
                        std::uint8_t* d_cost, std::uint8_t* d_paths, StreamHandle stream,
                        PerPathLanes lanes = PerPathLanes::kDefault);
/// WTA (+ uniqueness, subpixel, confidence) over the sum of the directions' volumes; `d_confidence` may be null.
void wta_per_path(const std::uint8_t* d_paths, const MatchSpec& spec, float* d_disparity, std::ptrdiff_t disp_pitch,
                  float* d_confidence, std::ptrdiff_t conf_pitch, StreamHandle stream);

}  // namespace s3d::stereo::detail::cuda
