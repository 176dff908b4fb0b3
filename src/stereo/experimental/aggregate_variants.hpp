#pragma once
// Aggregation variants that only the tests and bench_sgm run (target s3d_stereo_experimental, CUDA builds,
// not installed): every lane layout of both CUDA aggregation pipelines, so the layouts the library does not
// ship stay comparable (timed by bench_sgm) and correct (checked against the CPU by test_stereo_layouts).
// Same contracts as the library's cuda::aggregate / cuda::aggregate_per_path (backend.hpp,
// sgm_paths_cuda.cuh): device pointers, queued on the given streams, never synchronizing.
#include <cstdint>

#include "backend.hpp"

namespace s3d::stereo::detail::cuda::experimental {

/// Lane layout of the cost-volume scans: kWide = 16 disparities per lane in every direction;
/// kNarrowHorizontal = the horizontal directions (the W-step chains) with 4 disparities per lane (8 / 16 for
/// D > 128 / 256: a scanline is at most one warp); kNarrowAll = every direction so (the library's);
/// kDefault = what the library runs (default_per_path_lanes). The same bytes either way.
enum class PerPathLanes { kWide = 0, kNarrowHorizontal = 1, kNarrowAll = 2, kDefault = 3 };
/// The layout the library's cuda::aggregate_per_path runs: kNarrowAll.
PerPathLanes default_per_path_lanes(const MatchSpec& spec);

/// cuda::aggregate_per_path in any lane layout; with a null `d_cost`, the on-the-fly variant (every
/// direction recomputes its costs from the census codes; `lanes` does not apply). kNarrowAll with a cost
/// volume runs the library's own function. @throws InvalidArgument when the path costs do not fit a byte.
void aggregate_per_path(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
                        std::uint8_t* d_cost, std::uint8_t* d_paths, StreamHandle stream,
                        PerPathLanes lanes = PerPathLanes::kDefault);

/// cuda::aggregate (the uint16 fallback) honouring spec.lanes = 4/8/16/32 (forced lanes per scanline);
/// spec.lanes = 0 runs the library's own function. Volumes of volume_pitch(D, spec.lanes) per pixel.
void aggregate(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
               std::uint16_t* d_volume_a, std::uint16_t* d_volume_b, std::uint16_t* d_volume_c,
               const AggregateStreams& streams);

}  // namespace s3d::stereo::detail::cuda::experimental
