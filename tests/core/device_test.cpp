#include <gtest/gtest.h>

#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"

namespace s3d {

TEST(Device, ParsesEverySpelling) {
  EXPECT_TRUE(Device::parse("cpu").is_cpu());
  EXPECT_TRUE(Device::parse("auto").is_auto());
  EXPECT_EQ(Device::parse("cuda"), Device(Device::Kind::kCuda, 0));
  EXPECT_EQ(Device::parse("cuda:3").index(), 3);
  EXPECT_EQ(Device::parse("cuda:12").to_string(), "cuda:12");
}

TEST(Device, RejectsMalformedNames) {
  for (const char* bad : {"", "gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "cuda:1a", "cpu "})
    EXPECT_THROW(Device::parse(bad), InvalidArgument) << bad;
}

TEST(Device, AutoResolvesToSomethingConcrete) {
  bool fell_back = false;
  Device d = resolve_device(Device::parse("auto"), &fell_back);
  EXPECT_FALSE(d.is_auto());
  EXPECT_EQ(fell_back, cuda_device_count() == 0);
  EXPECT_EQ(d.is_cuda(), cuda_device_count() > 0);
}

TEST(Device, StrictCudaWithoutGpuIsUnavailable) {
  if (cuda_device_count() > 0) {
    EXPECT_THROW(resolve_device(Device(Device::Kind::kCuda, cuda_device_count())), DeviceUnavailable);
  } else {
    EXPECT_THROW(resolve_device(Device::parse("cuda")), DeviceUnavailable);
  }
}

TEST(Device, CpuAlwaysResolves) { EXPECT_TRUE(resolve_device(Device::parse("cpu")).is_cpu()); }

}  // namespace s3d
