// SgmEngine, CUDA backend: device buffers, pinned host staging, two streams and two events, all made once
// in the constructor and owned by core types (nothing to release by hand); compute() = copy into pinned
// staging, H2D, the stage kernels, D2H, one synchronize.
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "engine_impl.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"
#include "sgm_paths_cuda.cuh"

namespace s3d::stereo::detail {
namespace {

class CudaEngine final : public SgmEngine::Impl {
 public:
  CudaEngine(const Device& device, const SgmParams& params, int width, int height)
      : Impl(device, params, width, height) {
    const std::size_t n = static_cast<std::size_t>(width) * height;
    img_left_.resize(n, stream_);
    img_right_.resize(n, stream_);
    census_left_.resize(n, stream_);
    census_right_.resize(n, stream_);
    const MatchSpec spec = make_match_spec(params, width, height, false);
    per_path_ = cuda::per_path_fits(spec);
    if (per_path_) {
      paths_.resize(cuda::per_path_bytes(spec), stream_);
      cost_.resize(cuda::per_path_cost_bytes(spec), stream_);
    } else {
      volume_.resize(n * cuda::volume_pitch(params.disparities), stream_);
      volume_b_.resize(n * cuda::volume_pitch(params.disparities), stream_);
      volume_c_.resize(n * cuda::volume_pitch(params.disparities), stream_);
    }
    disp_.resize(n, stream_);
    out_disp_.resize(n, stream_);
    if (params.confidence) out_conf_.resize(n, stream_);
    if (params.lr_check) disp_right_.resize(n, stream_);
    if (params.speckle_size > 0) scratch_.resize(2 * n, stream_);
    host_in_.resize(2 * n);
    host_out_.resize(2 * n);
  }
  // The members then free in reverse order: the device buffers (ordered on stream_), the events, the streams.
  // side_ is waited for too: a compute that failed between fork and join may have left it writing the volumes.
  ~CudaEngine() override {
    try {
      teardown_device_.emplace(device_.index());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "s3d: SgmEngine: %s\n", e.what());
    }
    for (const Stream* s : {&side_, &stream_}) {
      try {
        s->synchronize();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "s3d: SgmEngine: %s\n", e.what());
      }
    }
  }

  void compute(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, float* disp, float* conf) override {
    run_host(l, r, disp, conf);
  }
  void compute(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, float* disp, float* conf) override {
    run_host(l, r, disp, conf);
  }
  void compute_device(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, ImageView<float> disp,
                      ImageView<float> conf, StreamHandle stream) override {
    run_device(l, r, disp, conf, stream ? stream : stream_.get());
  }
  void compute_device(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, ImageView<float> disp,
                      ImageView<float> conf, StreamHandle stream) override {
    run_device(l, r, disp, conf, stream ? stream : stream_.get());
  }
  StreamHandle stream() const override { return stream_.get(); }
  SgmMemory allocated() const override {
    const std::size_t device = img_left_.bytes() + img_right_.bytes() + census_left_.bytes() + census_right_.bytes() +
                               volume_.bytes() + volume_b_.bytes() + volume_c_.bytes() + paths_.bytes() +
                               cost_.bytes() + disp_.bytes() + disp_right_.bytes() + out_disp_.bytes() +
                               out_conf_.bytes() + scratch_.bytes();
    return {host_in_.bytes() + host_out_.bytes(), device};
  }

 private:
  template <typename T>
  void run_device(ImageView<const T> left, ImageView<const T> right, ImageView<float> disp, ImageView<float> conf,
                  cudaStream_t s) {
    const SgmParams& p = params_;
    const int W = width_, H = height_;
    const ScopedDevice current(device_.index());  // the calling thread may have another current device
    const CensusSpec cs{p.census, p.census_width, p.census_height};
    cuda::census_pair(left, right, cs, census_left_.data(), census_right_.data(), s);
    const MatchSpec sl = make_match_spec(p, W, H, false);
    const cuda::AggregateStreams as{s, side_, fork_.get(), join_.get()};
    float* d_conf = p.confidence ? conf.data : nullptr;
    // aggregation + WTA of one view (reference `ref`, target `tgt`) into `out`
    auto match = [&](const MatchSpec& spec, const std::uint64_t* ref, const std::uint64_t* tgt, float* out, float* c,
                     std::ptrdiff_t c_pitch, std::uint32_t* right_keys) {
      if (per_path_) {
        cuda::aggregate_per_path(ref, tgt, spec, cost_.data(), paths_.data(), s);
        cuda::wta_per_path(paths_.data(), spec, out, W, c, c_pitch, s, right_keys);
      } else {
        cuda::aggregate(ref, tgt, spec, volume_.data(), volume_b_.data(), volume_c_.data(), as);
        cuda::wta(volume_.data(), volume_b_.data(), volume_c_.data(), spec, out, W, c, c_pitch, s, right_keys);
      }
    };
    // LrMethod::kVolume: the right view's keys, then its disparities, in disp_right_ (both 4 bytes a pixel)
    const bool lr_volume = p.lr_check && p.lr_method == LrMethod::kVolume;
    std::uint32_t* right_keys = lr_volume ? reinterpret_cast<std::uint32_t*>(disp_right_.data()) : nullptr;
    if (right_keys)
      S3D_CUDA_CHECK(cudaMemsetAsync(right_keys, 0xff, static_cast<std::size_t>(W) * H * sizeof(std::uint32_t), s));
    match(sl, census_left_.data(), census_right_.data(), disp_.data(), d_conf, conf.pitch, right_keys);
    if (lr_volume) {
      cuda::right_disparity_from_keys(right_keys, sl, s);
    } else if (p.lr_check) {  // LrMethod::kRightSgm: the right view's own SGM run
      const MatchSpec sr = make_match_spec(p, W, H, true);
      match(sr, census_right_.data(), census_left_.data(), disp_right_.data(), nullptr, 0, nullptr);
    }
    if (p.lr_check) cuda::lr_check(disp_.data(), W, disp_right_.data(), W, H, p.lr_max_diff, s);
    if (p.median) {
      cuda::median3x3(disp_.data(), W, disp.data, disp.pitch, W, H, s);
    } else {
      S3D_CUDA_CHECK(cudaMemcpy2DAsync(disp.data, disp.pitch * sizeof(float), disp_.data(), W * sizeof(float),
                                       W * sizeof(float), H, cudaMemcpyDeviceToDevice, s));
    }
    if (p.speckle_size > 0)
      cuda::speckle(disp.data, disp.pitch, W, H, p.speckle_size, p.speckle_range, scratch_.data(), s);
    if (d_conf) cuda::mask_confidence(disp.data, disp.pitch, d_conf, conf.pitch, W, H, s);
    if (p.fill) cuda::fill_occlusions(disp.data, disp.pitch, W, H, s);  // after the mask: filled pixels keep 0
  }

  template <typename T>
  void run_host(ImageView<const T> left, ImageView<const T> right, float* out_disp, float* out_conf) {
    const int W = width_, H = height_;
    const std::size_t n = static_cast<std::size_t>(W) * H;
    const ScopedDevice current(device_.index());
    T* hl = reinterpret_cast<T*>(host_in_.data());
    T* hr = hl + n;
    for (int y = 0; y < H; ++y) {
      std::memcpy(hl + static_cast<std::size_t>(y) * W, left.row(y), W * sizeof(T));
      std::memcpy(hr + static_cast<std::size_t>(y) * W, right.row(y), W * sizeof(T));
    }
    T* dl = reinterpret_cast<T*>(img_left_.data());
    T* dr = reinterpret_cast<T*>(img_right_.data());
    S3D_CUDA_CHECK(cudaMemcpyAsync(dl, hl, n * sizeof(T), cudaMemcpyHostToDevice, stream_));
    S3D_CUDA_CHECK(cudaMemcpyAsync(dr, hr, n * sizeof(T), cudaMemcpyHostToDevice, stream_));
    ImageView<float> conf{out_conf_.data(), W, H, W};
    run_device(ImageView<const T>{dl, W, H, W}, ImageView<const T>{dr, W, H, W},
               ImageView<float>{out_disp_.data(), W, H, W}, conf, stream_);
    S3D_CUDA_CHECK(
        cudaMemcpyAsync(host_out_.data(), out_disp_.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    if (out_conf)
      S3D_CUDA_CHECK(
          cudaMemcpyAsync(host_out_.data() + n, out_conf_.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    S3D_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(out_disp, host_out_.data(), n * sizeof(float));
    if (out_conf) std::memcpy(out_conf, host_out_.data() + n, n * sizeof(float));
  }

  // Declared first, so destroyed last: the destructor makes the engine's device current for the members'
  // release and this restores the caller's device after it (construction runs under make_cuda_engine's).
  std::optional<ScopedDevice> teardown_device_;
  Stream stream_;
  Stream side_;  // horizontal paths, concurrent with the others
  Event fork_, join_;
  DeviceBuffer<std::uint16_t> img_left_, img_right_;  // 8-bit input uses the first half of each
  DeviceBuffer<std::uint64_t> census_left_, census_right_;
  DeviceBuffer<std::uint16_t> volume_, volume_b_, volume_c_;  // vertical+diagonal / left->right / right->left
  bool per_path_ = false;             // path costs fit a byte: per-direction uint8 volumes (sgm_paths_cuda.cuh)
  DeviceBuffer<std::uint8_t> paths_;  // [direction][y][x][per_path_pitch(D)]
  DeviceBuffer<std::uint8_t> cost_;   // the matching costs, computed once per view (aggregate_per_path)
  DeviceBuffer<float> disp_, disp_right_, out_disp_, out_conf_;
  DeviceBuffer<int> scratch_;
  PinnedBuffer<std::uint16_t> host_in_;  // pinned staging: left then right image
  PinnedBuffer<float> host_out_;         // pinned staging: disparity then confidence
};

}  // namespace

// The constructor's sizes: images (2n uint16), census codes (2n uint64), the per-path uint8 volumes and
// cost volume or three uint16 volumes, four n-float disparity/confidence buffers as enabled, the speckle
// labels (2n int); pinned staging of 2n uint16 in and 2n float out.
SgmMemory cuda_engine_memory(const SgmParams& params, int width, int height) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  std::size_t device = 2 * n * sizeof(std::uint16_t) + 2 * n * sizeof(std::uint64_t);
  const MatchSpec spec = make_match_spec(params, width, height, false);
  if (cuda::per_path_fits(spec)) {
    device += cuda::per_path_bytes(spec) + cuda::per_path_cost_bytes(spec);
  } else {
    device += 3 * n * static_cast<std::size_t>(cuda::volume_pitch(params.disparities)) * sizeof(std::uint16_t);
  }
  const std::size_t float_planes = 2 + (params.confidence ? 1 : 0) + (params.lr_check ? 1 : 0);
  device += float_planes * n * sizeof(float);
  if (params.speckle_size > 0) device += 2 * n * sizeof(int);
  return {2 * n * sizeof(std::uint16_t) + 2 * n * sizeof(float), device};
}

std::unique_ptr<SgmEngine::Impl> make_cuda_engine(const Device& device, const SgmParams& params, int width,
                                                  int height) {
  const ScopedDevice current(device.index());  // the members are created on the engine's device
  return std::make_unique<CudaEngine>(device, params, width, height);
}

}  // namespace s3d::stereo::detail
