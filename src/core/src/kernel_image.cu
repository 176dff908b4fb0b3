// Whether the current GPU can run this build's kernels, asked once when a device is chosen, so that a binary
// built without the GPU's architecture fails with one clear line (exit 75) instead of at the first launch.
#include <cuda_runtime.h>

#include "s3d/core/config.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device.hpp"

namespace s3d::detail {
namespace {
__global__ void kernel_image_probe_kernel() {}
}  // namespace

bool is_kernel_image_error(int status) {
  switch (static_cast<cudaError_t>(status)) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx:
    case cudaErrorInvalidKernelImage:
      return true;
    default:
      return false;
  }
}

std::string current_gpu_unsupported_message() {
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return unsupported_gpu_message("this GPU", 0, 0, S3D_CUDA_ARCHS);
  }
  return unsupported_gpu_message(prop.name, prop.major, prop.minor, S3D_CUDA_ARCHS);
}

void require_kernel_image(const void* kernel) {
  cudaFuncAttributes attributes{};
  const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
  if (status == cudaSuccess) return;
  cudaGetLastError();
  if (is_kernel_image_error(status)) throw DeviceUnavailable(current_gpu_unsupported_message());
  throw_cuda_error(status, "cudaFuncGetAttributes", __FILE__, __LINE__);
}

void require_kernel_image() { require_kernel_image(reinterpret_cast<const void*>(&kernel_image_probe_kernel)); }

}  // namespace s3d::detail
