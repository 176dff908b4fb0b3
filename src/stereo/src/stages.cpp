// Per-stage entry points (host memory): the dispatcher between the CPU backend and the CUDA host wrappers
// (stages_cuda.cu, or the stand-ins of stages_nocuda.cpp in a build without CUDA).
#include "s3d/stereo/stages.hpp"

#include <string>

#include "engine_impl.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::stereo::stages {
namespace {

// Without CUDA, resolve_device refuses `cuda` (DeviceUnavailable) and turns `auto` into the CPU, so the
// cuda_host calls below are never reached there (stages_nocuda.cpp only satisfies the linker).
bool use_cuda(const Device& device) { return resolve_device(device).is_cuda(); }

void check_size(std::size_t got, std::size_t want, const char* what) {
  if (got != want)
    throw InvalidArgument(std::string(what) + ": " + std::to_string(got) + " elements, expected " +
                          std::to_string(want));
}

template <typename T>
std::vector<std::uint64_t> census_impl(const Device& device, ImageView<const T> image, CensusKind kind, int ww,
                                       int wh) {
  SgmParams p;
  p.census = kind;
  p.census_width = ww;
  p.census_height = wh;
  p.validate();
  if (image.empty() || !image.data) throw InvalidArgument("census: empty image");
  const detail::CensusSpec spec{kind, ww, wh};
  if (use_cuda(device)) return detail::cuda_host::census(image, spec);
  std::vector<std::uint64_t> out(image.pixels());
  detail::cpu::census(image, spec, out.data());
  return out;
}

}  // namespace

std::vector<std::uint64_t> census(const Device& device, ImageView<const std::uint8_t> image, CensusKind kind,
                                  int window_width, int window_height) {
  return census_impl(device, image, kind, window_width, window_height);
}
std::vector<std::uint64_t> census(const Device& device, ImageView<const std::uint16_t> image, CensusKind kind,
                                  int window_width, int window_height) {
  return census_impl(device, image, kind, window_width, window_height);
}

std::vector<std::uint16_t> aggregate(const Device& device, const std::vector<std::uint64_t>& census_left,
                                     const std::vector<std::uint64_t>& census_right, int width, int height,
                                     const SgmParams& params, View view) {
  params.validate(width, height);
  const std::size_t n = static_cast<std::size_t>(width) * height;
  check_size(census_left.size(), n, "aggregate: census_left");
  check_size(census_right.size(), n, "aggregate: census_right");
  const bool right = view == View::kRight;
  const detail::MatchSpec spec = detail::make_match_spec(params, width, height, right);
  const auto& ref = right ? census_right : census_left;
  const auto& target = right ? census_left : census_right;
  if (use_cuda(device)) return detail::cuda_host::aggregate(ref, target, spec);
  std::vector<std::uint8_t> cost(n * params.disparities);
  std::vector<std::uint16_t> volume(cost.size()), volume_b(cost.size());
  detail::cpu::cost_volume(ref.data(), target.data(), spec, cost.data());
  detail::cpu::aggregate(cost.data(), spec, volume.data(), volume_b.data());
  detail::cpu::add_volume(volume.data(), volume_b.data(), volume.size());
  return volume;
}

void wta(const Device& device, const std::vector<std::uint16_t>& volume, int width, int height, const SgmParams& params,
         View view, std::vector<float>& disparity, std::vector<float>* confidence) {
  params.validate(width, height);
  const std::size_t n = static_cast<std::size_t>(width) * height;
  check_size(volume.size(), n * params.disparities, "wta: volume");
  const detail::MatchSpec spec = detail::make_match_spec(params, width, height, view == View::kRight);
  if (use_cuda(device)) return detail::cuda_host::wta(volume, spec, disparity, confidence);
  disparity.resize(n);
  if (confidence) confidence->resize(n);
  detail::cpu::wta(volume.data(), nullptr, spec, disparity.data(), confidence ? confidence->data() : nullptr);
}

std::vector<float> lr_check(const Device& device, const std::vector<float>& left, const std::vector<float>& right,
                            int width, int height, float max_diff) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  check_size(left.size(), n, "lr_check: left");
  check_size(right.size(), n, "lr_check: right");
  if (use_cuda(device)) return detail::cuda_host::lr_check(left, right, width, height, max_diff);
  std::vector<float> out = left;
  detail::cpu::lr_check(out.data(), right.data(), width, height, max_diff);
  return out;
}

std::vector<float> median3x3(const Device& device, const std::vector<float>& disparity, int width, int height) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  check_size(disparity.size(), n, "median3x3: disparity");
  if (use_cuda(device)) return detail::cuda_host::median3x3(disparity, width, height);
  std::vector<float> out(n);
  detail::cpu::median3x3(disparity.data(), out.data(), width, height);
  return out;
}

std::vector<float> speckle(const Device& device, const std::vector<float>& disparity, int width, int height,
                           int max_size, float max_diff) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  check_size(disparity.size(), n, "speckle: disparity");
  if (use_cuda(device)) return detail::cuda_host::speckle(disparity, width, height, max_size, max_diff);
  std::vector<float> out = disparity;
  std::vector<int> scratch(2 * n);
  detail::cpu::speckle(out.data(), width, height, max_size, max_diff, scratch.data());
  return out;
}

std::vector<float> fill_occlusions(const Device& device, const std::vector<float>& disparity, int width, int height) {
  if (width < 1 || height < 1)
    throw InvalidArgument("fill_occlusions: size " + std::to_string(width) + "x" + std::to_string(height) +
                          " must be at least 1x1");
  const std::size_t n = static_cast<std::size_t>(width) * height;
  check_size(disparity.size(), n, "fill_occlusions: disparity");
  if (use_cuda(device)) return detail::cuda_host::fill_occlusions(disparity, width, height);
  std::vector<float> out = disparity;
  detail::cpu::fill_occlusions(out.data(), width, height);
  return out;
}

}  // namespace s3d::stereo::stages
