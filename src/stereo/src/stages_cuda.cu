// Host-memory wrappers of single CUDA stages (see stages.hpp): upload, one stage, download, synchronize.
#include "engine_impl.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/stream.hpp"

namespace s3d::stereo::detail::cuda_host {

template <typename T>
std::vector<std::uint64_t> census(ImageView<const T> image, CensusSpec spec) {
  const std::size_t n = image.pixels();
  std::vector<T> dense(n);
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) dense[static_cast<std::size_t>(y) * image.width + x] = image(x, y);
  DeviceBuffer<T> d_img;
  d_img.copy_from_host(dense);
  DeviceBuffer<std::uint64_t> d_out(n);
  cuda::census(ImageView<const T>{d_img.data(), image.width, image.height, image.width}, spec, d_out.data(), nullptr);
  return d_out.to_host();
}
template std::vector<std::uint64_t> census<std::uint8_t>(ImageView<const std::uint8_t>, CensusSpec);
template std::vector<std::uint64_t> census<std::uint16_t>(ImageView<const std::uint16_t>, CensusSpec);

std::vector<std::uint16_t> aggregate(const std::vector<std::uint64_t>& ref, const std::vector<std::uint64_t>& target,
                                     const MatchSpec& spec) {
  DeviceBuffer<std::uint64_t> d_ref, d_target;
  d_ref.copy_from_host(ref);
  d_target.copy_from_host(target);
  const int vp = cuda::volume_pitch(spec.disparities, spec.lanes);
  const std::size_t n = static_cast<std::size_t>(spec.width) * spec.height;
  DeviceBuffer<std::uint16_t> d_vol(n * vp), d_vol_b(n * vp), d_vol_c(n * vp);
  const Stream side;
  const Event fork, join;
  try {
    cuda::aggregate(d_ref.data(), d_target.data(), spec, d_vol.data(), d_vol_b.data(), d_vol_c.data(),
                    {nullptr, side, fork.get(), join.get()});
    cuda::add_volumes(d_vol.data(), d_vol_b.data(), n * vp, nullptr);
    cuda::add_volumes(d_vol.data(), d_vol_c.data(), n * vp, nullptr);
    synchronize(nullptr);
  } catch (...) {
    // after a failed launch the side stream may still write volumes B and C, which are freed on the legacy
    // stream, which does not wait for a non-blocking stream
    if (cudaStreamSynchronize(side) != cudaSuccess) cudaGetLastError();
    throw;
  }
  std::vector<std::uint16_t> out(n * spec.disparities);
  S3D_CUDA_CHECK(cudaMemcpy2D(out.data(), spec.disparities * sizeof(std::uint16_t), d_vol.data(),
                              vp * sizeof(std::uint16_t), spec.disparities * sizeof(std::uint16_t), n,
                              cudaMemcpyDeviceToHost));
  return out;
}

void wta(const std::vector<std::uint16_t>& volume, const MatchSpec& spec, std::vector<float>& disparity,
         std::vector<float>* confidence) {
  const int vp = cuda::volume_pitch(spec.disparities, spec.lanes);
  const std::size_t n = static_cast<std::size_t>(spec.width) * spec.height;
  DeviceBuffer<std::uint16_t> d_vol(n * vp);
  S3D_CUDA_CHECK(cudaMemcpy2D(d_vol.data(), vp * sizeof(std::uint16_t), volume.data(),
                              spec.disparities * sizeof(std::uint16_t), spec.disparities * sizeof(std::uint16_t), n,
                              cudaMemcpyHostToDevice));
  DeviceBuffer<float> d_disp(n), d_conf(confidence ? n : 0);
  cuda::wta(d_vol.data(), nullptr, nullptr, spec, d_disp.data(), spec.width, confidence ? d_conf.data() : nullptr,
            spec.width, nullptr);
  disparity = d_disp.to_host();
  if (confidence) *confidence = d_conf.to_host();
}

std::vector<float> lr_check(const std::vector<float>& left, const std::vector<float>& right, int width, int height,
                            float max_diff) {
  DeviceBuffer<float> d_l, d_r;
  d_l.copy_from_host(left);
  d_r.copy_from_host(right);
  cuda::lr_check(d_l.data(), width, d_r.data(), width, height, max_diff, nullptr);
  return d_l.to_host();
}

std::vector<float> median3x3(const std::vector<float>& disparity, int width, int height) {
  DeviceBuffer<float> d_in, d_out(disparity.size());
  d_in.copy_from_host(disparity);
  cuda::median3x3(d_in.data(), width, d_out.data(), width, width, height, nullptr);
  return d_out.to_host();
}

std::vector<float> speckle(const std::vector<float>& disparity, int width, int height, int max_size, float max_diff) {
  DeviceBuffer<float> d;
  d.copy_from_host(disparity);
  DeviceBuffer<int> scratch(2 * disparity.size());
  cuda::speckle(d.data(), width, width, height, max_size, max_diff, scratch.data(), nullptr);
  return d.to_host();
}

std::vector<float> fill_occlusions(const std::vector<float>& disparity, int width, int height) {
  DeviceBuffer<float> d;
  d.copy_from_host(disparity);
  cuda::fill_occlusions(d.data(), width, width, height, nullptr);
  return d.to_host();
}

}  // namespace s3d::stereo::detail::cuda_host
