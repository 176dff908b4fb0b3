// Stand-ins for the CUDA host wrappers (engine_impl.hpp) in a build without CUDA: the dispatcher never
// calls them there (resolve_device refuses `cuda` first), but it is compiled unconditionally.
#include "engine_impl.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::stereo::detail::cuda_host {
namespace {
[[noreturn]] void no_cuda() { throw DeviceUnavailable("this build of s3d has no CUDA support"); }
}  // namespace

template <typename T>
std::vector<std::uint64_t> census(ImageView<const T>, CensusSpec) {
  no_cuda();
}
template std::vector<std::uint64_t> census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec);
template std::vector<std::uint64_t> census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec);

std::vector<std::uint16_t> aggregate(const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&,
                                     const MatchSpec&) {
  no_cuda();
}
void wta(const std::vector<std::uint16_t>&, const MatchSpec&, std::vector<float>&, std::vector<float>*) { no_cuda(); }
std::vector<float> lr_check(const std::vector<float>&, const std::vector<float>&, int, int, float) { no_cuda(); }
std::vector<float> median3x3(const std::vector<float>&, int, int) { no_cuda(); }
std::vector<float> speckle(const std::vector<float>&, int, int, int, float) { no_cuda(); }
std::vector<float> fill_occlusions(const std::vector<float>&, int, int) { no_cuda(); }

}  // namespace s3d::stereo::detail::cuda_host

namespace s3d::stereo::detail {
SgmMemory cuda_engine_memory(const SgmParams&, int, int) {
  throw DeviceUnavailable("this build of s3d has no CUDA support");
}
}  // namespace s3d::stereo::detail
