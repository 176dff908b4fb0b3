// This file is built for sm_80 SASS only (no PTX): on any GPU outside compute capability 8.x its kernel has no
// image, and require_kernel_image must refuse with the one-line message (exit 75 in the tools).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"

namespace s3d {
namespace {

__global__ void sm80_only_kernel() {}

TEST(KernelImage, AGpuOutsideTheBuildIsRefusedWithTheRebuildHint) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  resolve_device(Device::parse("cuda"));
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  if (prop.major == 8) GTEST_SKIP() << "an sm_8x GPU runs this file's sm_80 kernel";
  try {
    detail::require_kernel_image(reinterpret_cast<const void*>(&sm80_only_kernel));
    FAIL() << "no DeviceUnavailable";
  } catch (const DeviceUnavailable& e) {
    const std::string arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
    EXPECT_NE(std::string(e.what()).find(arch), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CMAKE_CUDA_ARCHITECTURES"), std::string::npos) << e.what();
  }
  // A launch of that kernel is mapped to the same error by the checked-launch path.
  sm80_only_kernel<<<1, 1>>>();
  const cudaError_t status = cudaGetLastError();
  EXPECT_TRUE(detail::is_kernel_image_error(status)) << cudaGetErrorName(status);
}

}  // namespace
}  // namespace s3d
