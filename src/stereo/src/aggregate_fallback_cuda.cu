// uint16 path aggregation, CUDA backend: the fallback for path costs that do not fit a byte
// (aggregate_fallback_cuda.cuh), in the automatic lane layouts, and the volume sum of the per-stage API.
#include "aggregate_fallback_cuda.cuh"

namespace s3d::stereo::detail::cuda {
using ::s3d::detail::grid_size;
namespace {

__global__ void add_volumes_kernel(std::uint16_t* a, const std::uint16_t* b, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) a[i] = static_cast<std::uint16_t>(a[i] + b[i]);
}

}  // namespace

int volume_pitch(int disparities, int lanes) {
  const Layout l = layout(disparities, lanes);
  return l.g * l.k;
}

void aggregate(const std::uint64_t* d_ref, const std::uint64_t* d_target, const MatchSpec& spec,
               std::uint16_t* d_volume_a, std::uint16_t* d_volume_b, std::uint16_t* d_volume_c,
               const AggregateStreams& streams) {
  if (spec.lanes != 0)
    throw InvalidArgument("aggregate: forced lane layouts are experiments (stereo::detail::cuda::experimental)");
  const Layout l = layout(spec.disparities, 0);
#define S3D_SGM_LAYOUT(G, K) \
  if (l.g == G && l.k == K)  \
  return launch_fallback<G, K>(d_ref, d_target, spec, d_volume_a, d_volume_b, d_volume_c, streams)
  S3D_SGM_LAYOUT(4, 4);
  S3D_SGM_LAYOUT(4, 8);
  S3D_SGM_LAYOUT(4, 16);
  S3D_SGM_LAYOUT(8, 16);
  S3D_SGM_LAYOUT(16, 16);
  S3D_SGM_LAYOUT(32, 16);
  S3D_SGM_LAYOUT(32, 32);
#undef S3D_SGM_LAYOUT
  throw InvalidArgument("aggregate: no kernel for the lane layout");
}

void add_volumes(std::uint16_t* d_a, const std::uint16_t* d_b, std::size_t count, StreamHandle stream) {
  add_volumes_kernel<<<grid_size(count, 256), 256, 0, stream>>>(d_a, d_b, count);
  S3D_CUDA_CHECK_LAUNCH();
}

}  // namespace s3d::stereo::detail::cuda
