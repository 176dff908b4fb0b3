#pragma once
// Internal (CUDA backend): the per-path uint8 aggregation pipeline used by the engine whenever every path
// cost fits a byte (max_cost + p2 <= 255, which the recurrence bounds L_r by; see aggregate_math.hpp).
// All path directions run in ONE launch (blockIdx.y = direction), each writing its own uint8 volume
// [direction][y][x][pitch] (no read-modify-write, no ordering between directions);
// the WTA sums the directions' bytes on the fly (<= 8 * 255 fits any int), so the decisions equal the
// CPU's, which sums the same L_r in uint16. Host functions queue work on `stream` and never synchronize.
#include <cstddef>
#include <cstdint>

#include "backend.hpp"

namespace s3d::stereo::detail::cuda {

/// True when the per-path pipeline applies: automatic lane layout (spec.lanes == 0), D <= 512 and
/// max_cost + p2 <= 255.
bool per_path_fits(const MatchSpec& spec);
/// Bytes per pixel of one direction's volume: D rounded up to 16 * a power of two (one 16-byte lane each).
int per_path_pitch(int disparities);
/// Bytes of all directions' volumes: paths * width * height * per_path_pitch(D).
std::size_t per_path_bytes(const MatchSpec& spec);
/// Bytes of the matching-cost volume: width * height * per_path_pitch(D).
std::size_t per_path_cost_bytes(const MatchSpec& spec);
/// Aggregates every direction of `spec` into `d_paths` (per_path_bytes(spec) bytes): the matching costs are
/// computed once into `d_cost` (per_path_cost_bytes(spec) bytes, scratch), then every direction scans them
/// with narrow lanes (4 disparities per lane, 8 / 16 for D > 128 / 256: a scanline is at most one warp).
/// The other lane layouts, and a variant without the cost volume, are experiments
/// (src/stereo/experimental, for the tests and bench_sgm).
/// @throws InvalidArgument when !per_path_fits(spec) or `d_cost` is null.
void aggregate_per_path(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
                        std::uint8_t* d_cost, std::uint8_t* d_paths, StreamHandle stream);
/// WTA (+ uniqueness, subpixel, confidence) over the sum of the directions' volumes; `d_confidence` may be null.
/// With `d_right_keys` (width * height, set to kNoRightKey by the caller; left view only) also folds the right
/// view's keys from the same sums (wta_math.hpp's right_key; right_disparity_from_keys() decodes them).
void wta_per_path(const std::uint8_t* d_paths, const MatchSpec& spec, float* d_disparity, std::ptrdiff_t disp_pitch,
                  float* d_confidence, std::ptrdiff_t conf_pitch, StreamHandle stream,
                  std::uint32_t* d_right_keys = nullptr);

}  // namespace s3d::stereo::detail::cuda
