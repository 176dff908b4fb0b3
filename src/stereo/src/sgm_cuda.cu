// SgmEngine, CUDA backend: device buffers, pinned host staging and a stream, all made once in the
// constructor; compute() = copy into pinned staging, H2D, the stage kernels, D2H, one synchronize.
#include <cstring>

#include "engine_impl.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "sgm_paths_cuda.cuh"

namespace s3d::stereo::detail {
namespace {

class CudaEngine final : public SgmEngine::Impl {
 public:
  CudaEngine(const Device& device, const SgmParams& params, int width, int height)
      : Impl(device, params, width, height) {
    S3D_CUDA_CHECK(cudaSetDevice(device.index()));
    S3D_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    try {
      S3D_CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
      S3D_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
      S3D_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
      const std::size_t n = static_cast<std::size_t>(width) * height;
      img_left_.resize(n, stream_);
      img_right_.resize(n, stream_);
      census_left_.resize(n, stream_);
      census_right_.resize(n, stream_);
      const MatchSpec spec = make_match_spec(params, width, height, false);
      per_path_ = cuda::per_path_fits(spec);
      if (per_path_) {
        paths_.resize(cuda::per_path_bytes(spec), stream_);
        if (kCostVolume) cost_.resize(cuda::per_path_cost_bytes(spec), stream_);
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
      S3D_CUDA_CHECK(cudaMallocHost(&host_in_, 2 * n * sizeof(std::uint16_t)));
      S3D_CUDA_CHECK(cudaMallocHost(&host_out_, 2 * n * sizeof(float)));
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaEngine() override { release(); }

  void compute(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, float* disp, float* conf) override {
    run_host(l, r, disp, conf);
  }
  void compute(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, float* disp, float* conf) override {
    run_host(l, r, disp, conf);
  }
  void compute_device(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, ImageView<float> disp,
                      ImageView<float> conf, StreamHandle stream) override {
    run_device(l, r, disp, conf, stream ? stream : stream_);
  }
  void compute_device(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, ImageView<float> disp,
                      ImageView<float> conf, StreamHandle stream) override {
    run_device(l, r, disp, conf, stream ? stream : stream_);
  }
  StreamHandle stream() const override { return stream_; }

 private:
  void release() noexcept {
    if (stream_) cudaStreamSynchronize(stream_);
    img_left_.reset();
    img_right_.reset();
    census_left_.reset();
    census_right_.reset();
    volume_.reset();
    volume_b_.reset();
    volume_c_.reset();
    paths_.reset();
    cost_.reset();
    disp_.reset();
    disp_right_.reset();
    out_disp_.reset();
    out_conf_.reset();
    scratch_.reset();
    if (host_in_) cudaFreeHost(host_in_);
    if (host_out_) cudaFreeHost(host_out_);
    host_in_ = nullptr;
    host_out_ = nullptr;
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    if (side_) cudaStreamDestroy(side_);
    if (fork_) cudaEventDestroy(fork_);
    if (join_) cudaEventDestroy(join_);
    stream_ = side_ = nullptr;
    fork_ = join_ = nullptr;
  }

  template <typename T>
  void run_device(ImageView<const T> left, ImageView<const T> right, ImageView<float> disp, ImageView<float> conf,
                  cudaStream_t s) {
    const SgmParams& p = params_;
    const int W = width_, H = height_;
    S3D_CUDA_CHECK(cudaSetDevice(device_.index()));  // the calling thread may have another current device
    const CensusSpec cs{p.census, p.census_width, p.census_height};
    cuda::census_pair(left, right, cs, census_left_.data(), census_right_.data(), s);
    const MatchSpec sl = make_match_spec(p, W, H, false);
    const cuda::AggregateStreams as{s, side_, fork_, join_};
    float* d_conf = p.confidence ? conf.data : nullptr;
    // aggregation + WTA of one view (reference `ref`, target `tgt`) into `out`
    auto match = [&](const MatchSpec& spec, const std::uint64_t* ref, const std::uint64_t* tgt, float* out, float* c,
                     std::ptrdiff_t c_pitch) {
      if (per_path_) {
        cuda::aggregate_per_path(ref, tgt, spec, kCostVolume ? cost_.data() : nullptr, paths_.data(), s);
        cuda::wta_per_path(paths_.data(), spec, out, W, c, c_pitch, s);
      } else {
        cuda::aggregate(ref, tgt, spec, volume_.data(), volume_b_.data(), volume_c_.data(), as);
        cuda::wta(volume_.data(), volume_b_.data(), volume_c_.data(), spec, out, W, c, c_pitch, s);
      }
    };
    match(sl, census_left_.data(), census_right_.data(), disp_.data(), d_conf, conf.pitch);
    if (p.lr_check) {
      const MatchSpec sr = make_match_spec(p, W, H, true);
      match(sr, census_right_.data(), census_left_.data(), disp_right_.data(), nullptr, 0);
      cuda::lr_check(disp_.data(), W, disp_right_.data(), W, H, p.lr_max_diff, s);
    }
    if (p.median) {
      cuda::median3x3(disp_.data(), W, disp.data, disp.pitch, W, H, s);
    } else {
      S3D_CUDA_CHECK(cudaMemcpy2DAsync(disp.data, disp.pitch * sizeof(float), disp_.data(), W * sizeof(float),
                                       W * sizeof(float), H, cudaMemcpyDeviceToDevice, s));
    }
    if (p.speckle_size > 0) cuda::speckle(disp.data, disp.pitch, W, H, p.speckle_size, p.speckle_range, scratch_.data(), s);
    if (d_conf) cuda::mask_confidence(disp.data, disp.pitch, d_conf, conf.pitch, W, H, s);
    if (p.fill) cuda::fill_background(disp.data, disp.pitch, W, H, s);  // after the mask: filled pixels keep 0
  }

  template <typename T>
  void run_host(ImageView<const T> left, ImageView<const T> right, float* out_disp, float* out_conf) {
    const int W = width_, H = height_;
    const std::size_t n = static_cast<std::size_t>(W) * H;
    T* hl = reinterpret_cast<T*>(host_in_);
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
    run_device(ImageView<const T>{dl, W, H, W}, ImageView<const T>{dr, W, H, W}, ImageView<float>{out_disp_.data(), W, H, W},
               conf, stream_);
    S3D_CUDA_CHECK(cudaMemcpyAsync(host_out_, out_disp_.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    if (out_conf)
      S3D_CUDA_CHECK(cudaMemcpyAsync(host_out_ + n, out_conf_.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    S3D_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::memcpy(out_disp, host_out_, n * sizeof(float));
    if (out_conf) std::memcpy(out_conf, host_out_ + n, n * sizeof(float));
  }

  cudaStream_t stream_ = nullptr;
  cudaStream_t side_ = nullptr;  // horizontal paths, concurrent with the others
  cudaEvent_t fork_ = nullptr, join_ = nullptr;
  DeviceBuffer<std::uint16_t> img_left_, img_right_;  // 8-bit input uses the first half of each
  DeviceBuffer<std::uint64_t> census_left_, census_right_;
  DeviceBuffer<std::uint16_t> volume_, volume_b_, volume_c_;  // vertical+diagonal / left->right / right->left
  bool per_path_ = false;                 // path costs fit a byte: per-direction uint8 volumes (sgm_paths_cuda.cuh)
  DeviceBuffer<std::uint8_t> paths_;      // [direction][y][x][per_path_pitch(D)]
  static constexpr bool kCostVolume = true;  // matching costs once into cost_ (see aggregate_per_path)
  DeviceBuffer<std::uint8_t> cost_;
  DeviceBuffer<float> disp_, disp_right_, out_disp_, out_conf_;
  DeviceBuffer<int> scratch_;
  void* host_in_ = nullptr;
  float* host_out_ = nullptr;
};

}  // namespace

std::unique_ptr<SgmEngine::Impl> make_cuda_engine(const Device& device, const SgmParams& params, int width,
                                                  int height) {
  return std::make_unique<CudaEngine>(device, params, width, height);
}

}  // namespace s3d::stereo::detail
