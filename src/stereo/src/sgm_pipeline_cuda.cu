// SgmPipeline, CUDA backend: `depth` slots, each with pinned host input/output, device input/output and
// three events; two copy streams beside the engine's stream. Ordering per slot (sgm_pipeline.hpp):
//   upload_:  H2D(slot)                                   -> uploaded
//   engine:   wait(uploaded); compute_device(slot)        -> computed
//   download_: wait(computed); D2H(slot)                  -> downloaded
// The host reuses a slot only after waiting on `downloaded`, which transitively follows the slot's upload
// and compute, so one host-side wait guards every buffer of the slot. The engine runs its pairs in order
// on its own stream (its internal buffers are shared between pairs); only the copies run beside it.
#include <cstdio>
#include <cstring>
#include <vector>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "sgm_pipeline_impl.hpp"

namespace s3d::stereo::detail {
namespace {

struct Slot {
  void* h_in = nullptr;    // pinned: left then right image, packed (pitch = width), 8- or 16-bit
  float* h_out = nullptr;  // pinned: disparity then (with params.confidence) confidence
  DeviceBuffer<std::uint16_t> d_in;  // same layout as h_in (an 8-bit pair uses the first half in bytes)
  DeviceBuffer<float> d_out;         // same layout as h_out
  cudaEvent_t uploaded = nullptr, computed = nullptr, downloaded = nullptr;
};

// Logs a failure from a path that must not throw (destruction).
void log_failure(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "s3d: SgmPipeline: %s failed: %s\n", what, cudaGetErrorString(status));
  }
}

class CudaPipeline final : public SgmPipeline::Impl {
 public:
  CudaPipeline(SgmEngine engine, int depth) : Impl(std::move(engine), depth) {
    device_index_ = engine_.device().index();
    pixels_ = static_cast<std::size_t>(engine_.width()) * engine_.height();
    planes_ = engine_.params().confidence ? 2 : 1;
    S3D_CUDA_CHECK(cudaSetDevice(device_index_));
    try {
      S3D_CUDA_CHECK(cudaStreamCreateWithFlags(&upload_, cudaStreamNonBlocking));
      S3D_CUDA_CHECK(cudaStreamCreateWithFlags(&download_, cudaStreamNonBlocking));
      slots_.resize(static_cast<std::size_t>(depth));
      for (Slot& s : slots_) {
        S3D_CUDA_CHECK(cudaEventCreateWithFlags(&s.uploaded, cudaEventDisableTiming));
        S3D_CUDA_CHECK(cudaEventCreateWithFlags(&s.computed, cudaEventDisableTiming));
        S3D_CUDA_CHECK(cudaEventCreateWithFlags(&s.downloaded, cudaEventDisableTiming));
        s.d_in.resize(2 * pixels_, upload_);
        s.d_out.resize(planes_ * pixels_, upload_);
        S3D_CUDA_CHECK(cudaMallocHost(&s.h_in, 2 * pixels_ * sizeof(std::uint16_t)));
        S3D_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.h_out), planes_ * pixels_ * sizeof(float)));
      }
      // The pool allocations are ordered on upload_; the engine and download streams use them too.
      S3D_CUDA_CHECK(cudaStreamSynchronize(upload_));
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaPipeline() override { release(); }

  void submit(int slot, ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r) override {
    queue(slots_[slot], l, r);
  }
  void submit(int slot, ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r) override {
    queue(slots_[slot], l, r);
  }

  void retrieve(int slot, float* disparity, float* confidence) override {
    Slot& s = slots_[slot];
    wait(slot);
    std::memcpy(disparity, s.h_out, pixels_ * sizeof(float));
    if (confidence && planes_ == 2) std::memcpy(confidence, s.h_out + pixels_, pixels_ * sizeof(float));
  }

  void wait(int slot) override {
    S3D_CUDA_CHECK(cudaSetDevice(device_index_));  // the calling thread may have another current device
    S3D_CUDA_CHECK(cudaEventSynchronize(slots_[slot].downloaded));
  }

 private:
  template <typename T>
  void queue(Slot& s, ImageView<const T> left, ImageView<const T> right) {
    const int w = engine_.width(), h = engine_.height();
    S3D_CUDA_CHECK(cudaSetDevice(device_index_));
    // Pack into pinned staging: the copy engine then reads it asynchronously (pageable memory would not).
    T* hl = static_cast<T*>(s.h_in);
    T* hr = hl + pixels_;
    auto pack = [&](ImageView<const T> im, T* dst) {
      if (im.pitch == w) {
        std::memcpy(dst, im.data, pixels_ * sizeof(T));
      } else {
        for (int y = 0; y < h; ++y) std::memcpy(dst + static_cast<std::size_t>(y) * w, im.row(y), w * sizeof(T));
      }
    };
    pack(left, hl);
    pack(right, hr);
    T* dl = reinterpret_cast<T*>(s.d_in.data());
    T* dr = dl + pixels_;
    S3D_CUDA_CHECK(cudaMemcpyAsync(dl, hl, 2 * pixels_ * sizeof(T), cudaMemcpyHostToDevice, upload_));
    S3D_CUDA_CHECK(cudaEventRecord(s.uploaded, upload_));

    cudaStream_t compute = engine_.stream();
    S3D_CUDA_CHECK(cudaStreamWaitEvent(compute, s.uploaded, 0));
    float* d_disp = s.d_out.data();
    float* d_conf = planes_ == 2 ? d_disp + pixels_ : nullptr;
    engine_.compute_device(ImageView<const T>{dl, w, h, w}, ImageView<const T>{dr, w, h, w},
                           ImageView<float>{d_disp, w, h, w}, ImageView<float>{d_conf, w, h, w}, compute);
    S3D_CUDA_CHECK(cudaEventRecord(s.computed, compute));

    S3D_CUDA_CHECK(cudaStreamWaitEvent(download_, s.computed, 0));
    S3D_CUDA_CHECK(cudaMemcpyAsync(s.h_out, d_disp, planes_ * pixels_ * sizeof(float), cudaMemcpyDeviceToHost, download_));
    S3D_CUDA_CHECK(cudaEventRecord(s.downloaded, download_));
  }

  // Waits for all queued work, then frees in reverse order of creation. Never throws.
  void release() noexcept {
    log_failure(cudaSetDevice(device_index_), "cudaSetDevice");
    if (upload_) log_failure(cudaStreamSynchronize(upload_), "cudaStreamSynchronize(upload)");
    if (engine_.stream()) log_failure(cudaStreamSynchronize(engine_.stream()), "cudaStreamSynchronize(engine)");
    if (download_) log_failure(cudaStreamSynchronize(download_), "cudaStreamSynchronize(download)");
    for (Slot& s : slots_) {
      s.d_in.reset();  // stream-ordered on upload_, which is idle
      s.d_out.reset();
      if (s.h_in) log_failure(cudaFreeHost(s.h_in), "cudaFreeHost");
      if (s.h_out) log_failure(cudaFreeHost(s.h_out), "cudaFreeHost");
      for (cudaEvent_t e : {s.uploaded, s.computed, s.downloaded})
        if (e) log_failure(cudaEventDestroy(e), "cudaEventDestroy");
      s = Slot{};
    }
    slots_.clear();
    if (upload_) {
      log_failure(cudaStreamSynchronize(upload_), "cudaStreamSynchronize(upload)");  // the pool releases
      log_failure(cudaStreamDestroy(upload_), "cudaStreamDestroy");
    }
    if (download_) log_failure(cudaStreamDestroy(download_), "cudaStreamDestroy");
    upload_ = download_ = nullptr;
  }

  int device_index_ = 0;
  std::size_t pixels_ = 0;
  std::size_t planes_ = 1;  // 1: disparity; 2: disparity + confidence
  cudaStream_t upload_ = nullptr, download_ = nullptr;
  std::vector<Slot> slots_;
};

}  // namespace

std::unique_ptr<SgmPipeline::Impl> make_cuda_pipeline(SgmEngine engine, int depth) {
  return std::make_unique<CudaPipeline>(std::move(engine), depth);
}

}  // namespace s3d::stereo::detail
