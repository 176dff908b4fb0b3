#pragma once
// Internal: the backend side of NmsEngine. The dispatcher (nms.cpp) validates, then calls one of these; the CPU
// engine is nms_cpu_engine.cpp, the CUDA engine nms_engine_cuda.cu. No CUDA types here.
#include <cstdint>
#include <memory>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/detection/nms.hpp"

namespace s3d::detection {

struct NmsEngine::Impl {
  explicit Impl(const Device& device) : device_(device) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Host inputs (validated, finite), host result; synchronous.
  virtual NmsResult run(const NmsInput& host_input, const NmsParams& params, StreamHandle stream) = 0;
  /// Device inputs, device result (validated params and shape only).
  virtual void run_device_async(const NmsInput& device_input, const NmsParams& params, StreamHandle stream) = 0;
  virtual const std::int64_t* device_keep() const = 0;
  virtual const float* device_scores() const = 0;
  virtual const std::int64_t* device_keep_count() const = 0;
  virtual NmsResult download(StreamHandle stream) const = 0;
  virtual NmsEngine::Stats last_stats() const = 0;

  Device device_;
};

namespace detail {
std::unique_ptr<NmsEngine::Impl> make_cpu_engine(const Device& device);
/// Defined only when CUDA is built. @throws DeviceUnavailable, CudaError.
std::unique_ptr<NmsEngine::Impl> make_cuda_engine(const Device& device);
}  // namespace detail

}  // namespace s3d::detection
