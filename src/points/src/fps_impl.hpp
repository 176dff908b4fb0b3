#pragma once
// Internal: the backend side of FpsEngine. fps.cpp validates and dispatches; fps_cpu.cpp and fps_cuda.cu
// implement it. No CUDA types here.
#include <cstdint>
#include <memory>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/fps.hpp"

namespace s3d::points {

class FpsEngine::Impl {
 public:
  explicit Impl(const Device& device) : device_(device) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Validated batch in host memory; returns total_samples() local indices.
  virtual std::vector<std::int32_t> run_host(const FpsBatch& batch) = 0;
  /// Validated batch in device memory (CUDA only).
  virtual void run_device_async(const FpsBatch& batch, std::int32_t* device_out, StreamHandle stream) = 0;

  Device device_;
};

namespace detail {
std::unique_ptr<FpsEngine::Impl> make_cpu_fps(const Device& device);
/// Defined only when CUDA is built. @throws DeviceUnavailable, CudaError.
std::unique_ptr<FpsEngine::Impl> make_cuda_fps(const Device& device);
/// The CPU oracle for one cloud (also used by the CUDA backend's tests through the public API). A large cloud's
/// threads hand the remaining steps to one thread when they wait more than they work; `alone_after` >= 1 makes
/// them do so after that step whatever they measure (for the tests: the result must not change).
void fps_cpu_cloud(const float* xyz, std::int64_t n, std::int64_t samples, std::int64_t start, std::int32_t* out,
                   std::int64_t alone_after = -1);
}  // namespace detail

}  // namespace s3d::points
