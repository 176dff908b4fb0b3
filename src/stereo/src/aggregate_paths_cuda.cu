// Per-path uint8 aggregation, CUDA backend: the engine's path (sgm_paths_cuda.cuh). The matching costs are
// computed once into a volume, then every direction scans it with narrow lanes, all directions in one launch.
#include "aggregate_paths_cuda.cuh"
#include "s3d/core/cuda_check.cuh"
#include "sgm_paths_cuda.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

template <int G>
void launch_per_path(const std::uint64_t* ref, const std::uint64_t* target, const MatchSpec& s, std::uint8_t* cost,
                     std::uint8_t* paths, StreamHandle stream) {
  const int pitch = G * kPK;
  const std::size_t vbytes = static_cast<std::size_t>(s.width) * s.height * pitch;
  const int scans = s.paths > 4 ? s.width + s.height - 1 : std::max(s.width, s.height);
  const dim3 grid(grid_size(static_cast<std::size_t>(scans) * Narrow<G>::kG, kPerPathBlock),
                  static_cast<unsigned>(s.paths));
  const dim3 tiles(grid_size(static_cast<std::size_t>(s.width), kCostTilePixels), static_cast<unsigned>(s.height));
  cost_volume_kernel<G><<<tiles, 32 * G, 0, stream>>>(ref, target, s, cost);
  S3D_CUDA_CHECK_LAUNCH();
  aggregate_cost_narrow_kernel<G><<<grid, kPerPathBlock, 0, stream>>>(cost, s, paths, pitch, vbytes);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool per_path_fits(const MatchSpec& spec) {
  return spec.lanes == 0 && spec.disparities <= 32 * kPK && spec.max_cost + spec.p2 <= 255 && spec.paths <= 8;
}

int per_path_pitch(int disparities) { return per_path_lanes(disparities) * kPK; }

std::size_t per_path_cost_bytes(const MatchSpec& spec) {
  return static_cast<std::size_t>(spec.width) * spec.height * per_path_pitch(spec.disparities);
}

std::size_t per_path_bytes(const MatchSpec& spec) {
  return static_cast<std::size_t>(spec.paths) * spec.width * spec.height * per_path_pitch(spec.disparities);
}

void aggregate_per_path(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
                        std::uint8_t* d_cost, std::uint8_t* d_paths, StreamHandle stream) {
  if (!per_path_fits(spec)) throw InvalidArgument("aggregate_per_path: path costs do not fit a byte");
  if (!d_cost) throw InvalidArgument("aggregate_per_path: the cost volume scratch is required");
  switch (per_path_lanes(spec.disparities)) {
    case 1:
      return launch_per_path<1>(d_ref, d_target, spec, d_cost, d_paths, stream);
    case 2:
      return launch_per_path<2>(d_ref, d_target, spec, d_cost, d_paths, stream);
    case 4:
      return launch_per_path<4>(d_ref, d_target, spec, d_cost, d_paths, stream);
    case 8:
      return launch_per_path<8>(d_ref, d_target, spec, d_cost, d_paths, stream);
    case 16:
      return launch_per_path<16>(d_ref, d_target, spec, d_cost, d_paths, stream);
    case 32:
      return launch_per_path<32>(d_ref, d_target, spec, d_cost, d_paths, stream);
    default:
      throw InvalidArgument("aggregate_per_path: no kernel for the disparity range");
  }
}

}  // namespace s3d::stereo::detail::cuda
