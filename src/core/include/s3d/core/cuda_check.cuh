#pragma once
// Checking CUDA calls and launches (needs the CUDA runtime headers; included only by .cu/.cpp backends).
// On failure the sticky error is cleared first (cudaGetLastError) so that it cannot leak into an
// unrelated later launch, then a typed exception carries file:line and CUDA's own message.
#include <cuda_runtime.h>

#include <string>

#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line) {
  cudaGetLastError();
  std::string where = std::string(file) + ":" + std::to_string(line);
  std::string what =
      std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ") in " + expression + " at " + where;
  if (status == cudaErrorMemoryAllocation) throw OutOfMemory("out of GPU memory: " + what);
  if (is_kernel_image_error(status)) throw DeviceUnavailable(current_gpu_unsupported_message());
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver || status == cudaErrorInvalidDevice)
    throw DeviceUnavailable("CUDA device unavailable: " + what);
  throw CudaError("CUDA error: " + what);
}

}  // namespace s3d::detail

/// Evaluates a CUDA runtime call and throws on failure.
#define S3D_CUDA_CHECK(call)                                                                                 \
  do {                                                                                                       \
    cudaError_t s3d_status_ = (call);                                                                        \
    if (s3d_status_ != cudaSuccess) ::s3d::detail::throw_cuda_error(s3d_status_, #call, __FILE__, __LINE__); \
  } while (0)

/// Checks the launch just made (configuration errors surface here; faults surface at the next sync).
#define S3D_CUDA_CHECK_LAUNCH() S3D_CUDA_CHECK(cudaGetLastError())

namespace s3d::detail {
/// Blocks per grid for `n` items at `block` threads each.
inline unsigned int grid_size(std::size_t n, unsigned int block) {
  return static_cast<unsigned int>((n + block - 1) / block);
}
}  // namespace s3d::detail
