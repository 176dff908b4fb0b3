#include <gtest/gtest.h>

#include "s3d/core/device.hpp"
#include "s3d/core/errors.hpp"

#include <algorithm>
#include <vector>

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

TEST(Device, ParsesLists) {
  const std::vector<Device> list = parse_devices("cuda:1,0,3");
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0], Device(Device::Kind::kCuda, 1));
  EXPECT_EQ(list[2], Device(Device::Kind::kCuda, 3));
  EXPECT_EQ(to_string(list), "cuda:1,0,3");
  EXPECT_EQ(parse_devices("cpu"), std::vector<Device>{Device(Device::Kind::kCpu)});
  EXPECT_EQ(parse_devices("cuda:2"), std::vector<Device>{Device(Device::Kind::kCuda, 2)});
  EXPECT_EQ(to_string(parse_devices("auto")), "auto");
  for (const char* bad : {"cuda:0,0", "cuda:0,", "cuda:,1", "cpu,cuda:0", "cuda:0,cuda:1", "cuda:0,x", "cuda:al"})
    EXPECT_THROW(parse_devices(bad), InvalidArgument) << bad;
}

TEST(Device, AllIsEveryVisibleGpuOrAnUnavailableOne) {
  const std::vector<Device> all = parse_devices("cuda:all");
  ASSERT_EQ(all.size(), static_cast<std::size_t>(std::max(1, cuda_device_count())));
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], Device(Device::Kind::kCuda, static_cast<int>(i)));
  if (cuda_device_count() == 0) {
    EXPECT_THROW(resolve_devices(all), DeviceUnavailable);
  } else {
    EXPECT_EQ(resolve_devices(all), all);
    EXPECT_EQ(current_cuda_device(), 0);  // the first is left current
  }
}

TEST(Device, CpuAlwaysResolves) { EXPECT_TRUE(resolve_device(Device::parse("cpu")).is_cpu()); }

}  // namespace s3d
