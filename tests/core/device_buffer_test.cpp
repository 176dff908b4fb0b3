#include <gtest/gtest.h>

#include <numeric>

#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"

namespace s3d {

class DeviceBufferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    resolve_device(Device::parse("cuda"));
  }
};

TEST_F(DeviceBufferTest, RoundTripsThroughDevice) {
  std::vector<int> host(1001);
  std::iota(host.begin(), host.end(), -500);
  DeviceBuffer<int> buffer;
  buffer.copy_from_host(host);
  EXPECT_EQ(buffer.size(), host.size());
  EXPECT_EQ(buffer.to_host(), host);
}

TEST_F(DeviceBufferTest, CountsLiveAllocationsAndMoves) {
  const auto before = live_device_allocations();
  {
    DeviceBuffer<float> a(100);
    EXPECT_EQ(live_device_allocations(), before + 1);
    DeviceBuffer<float> b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.size(), 100u);
    EXPECT_EQ(live_device_allocations(), before + 1);
    b.resize(50);  // shrinking keeps the allocation
    EXPECT_EQ(live_device_allocations(), before + 1);
    EXPECT_EQ(b.capacity(), 100u);
  }
  EXPECT_EQ(live_device_allocations(), before);
}

TEST_F(DeviceBufferTest, ImpossibleAllocationIsOutOfMemory) {
  EXPECT_THROW(DeviceBuffer<char>(std::size_t{1} << 60), OutOfMemory);
}

TEST(DeviceBufferNoGpu, StrictStreamWithoutCudaThrowsTyped) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  if (cuda_built()) {
    EXPECT_THROW(DeviceBuffer<int>(10), Error);
  } else {
    EXPECT_THROW(DeviceBuffer<int>(10), DeviceUnavailable);
  }
}

}  // namespace s3d
