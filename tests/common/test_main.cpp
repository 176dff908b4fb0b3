// GoogleTest main shared by every s3d suite: after all tests, every DeviceBuffer must have been
// released (the stdgpu-style leak check), else the run fails.
#include <gtest/gtest.h>

#include <cstdio>

#include "s3d/core/device_buffer.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto allocations_before = s3d::live_device_allocations();
  int result = RUN_ALL_TESTS();
  const auto leaked = s3d::live_device_allocations() - allocations_before;
  std::printf("s3d: device allocations alive at exit: %lld (%lld bytes)\n", static_cast<long long>(leaked),
              static_cast<long long>(s3d::live_device_bytes()));
  if (leaked != 0) {
    std::fprintf(stderr, "s3d: %lld device allocation(s) leaked\n", static_cast<long long>(leaked));
    return 1;
  }
  return result;
}
