#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/image.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"

namespace s3d {
namespace {

TEST(PinnedBuffer, GrowsOnlyAboveCapacityAndMoves) {
  PinnedBuffer<int> a(10);  // page-locked with CUDA, heap memory without: usable on every machine
  std::iota(a.begin(), a.end(), 0);
  int* first = a.data();
  a.resize(5);
  EXPECT_EQ(a.data(), first);
  EXPECT_EQ(a.capacity(), 10u);
  EXPECT_EQ(a[4], 4);
  PinnedBuffer<int> b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b.data(), first);
  b.resize(11);
  EXPECT_EQ(b.size(), 11u);
  EXPECT_GE(b.capacity(), 11u);
}

TEST(Image, ViewAddressesThePixels) {
  Image<float> image(3, 2, 1, kInvalid);
  image.at(2, 1) = 7.0f;
  const auto view = image.view();
  EXPECT_EQ(view.width, 3);
  EXPECT_EQ(image.pixels(), 6u);
  EXPECT_EQ(view.pitch, 3);
  EXPECT_EQ(view(2, 1), 7.0f);
  EXPECT_FALSE(is_valid(view(0, 0)));
  EXPECT_FALSE(is_valid(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(is_valid(-std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(is_valid(0.0f));
}

TEST(UnsupportedGpuMessage, NamesTheArchitectureAndTheRebuild) {
  const std::string m = detail::unsupported_gpu_message("Tesla P100", 6, 0, "sm_75 sm_90, PTX compute_90");
  EXPECT_NE(m.find("Tesla P100 is sm_60"), std::string::npos) << m;
  EXPECT_NE(m.find("sm_75 sm_90, PTX compute_90"), std::string::npos) << m;
  EXPECT_NE(m.find("-DCMAKE_CUDA_ARCHITECTURES=\"60\""), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "one line";
}

class CudaRaiiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    resolve_device(Device::parse("cuda"));
  }
};

TEST_F(CudaRaiiTest, EventsOrderStreamsAndTime) {
  Stream upload, compute;
  Event uploaded, start(Event::Timing::kEnabled), stop(Event::Timing::kEnabled);
  PinnedBuffer<int> host(1 << 20);
  std::iota(host.begin(), host.end(), 1);
  DeviceBuffer<int> device(host.size(), upload);
  start.record(upload);
  device.copy_from_host_async(host.data(), host.size(), upload);
  uploaded.record(upload);
  stop.record(upload);
  uploaded.wait(compute);  // the download on `compute` must see the upload
  PinnedBuffer<int> back(host.size());
  device.copy_to_host_async(back.data(), back.size(), compute);
  compute.synchronize();
  EXPECT_TRUE(uploaded.ready());
  EXPECT_TRUE(std::equal(host.begin(), host.end(), back.begin()));
  (void)Event::elapsed_ms(start, stop);  // throws unless both events were timed and have completed
  upload.synchronize();
}

TEST_F(CudaRaiiTest, ScopedDeviceRestoresTheCurrentDevice) {
  const int count = cuda_device_count();
  ASSERT_EQ(current_cuda_device(), 0);  // SetUp resolved cuda:0
  {
    const ScopedDevice on_last(count - 1);
    EXPECT_EQ(current_cuda_device(), count - 1);
  }
  EXPECT_EQ(current_cuda_device(), 0);
  {
    const ScopedDevice on_first(0);  // nothing to restore: already current
    EXPECT_EQ(current_cuda_device(), 0);
  }
  EXPECT_EQ(current_cuda_device(), 0);
  {
    const ScopedDevice on_last(count - 1);
    EXPECT_THROW(ScopedDevice(count + 5), Error);
    EXPECT_EQ(current_cuda_device(), count - 1);  // a refused selection changes nothing
  }
  EXPECT_EQ(current_cuda_device(), 0);
}

TEST_F(CudaRaiiTest, TheBuildHasAnImageForThisGpu) { EXPECT_NO_THROW(detail::require_kernel_image()); }

TEST(CoreNoGpu, CudaTypesRefuseWithoutCuda) {
  if (cuda_built()) GTEST_SKIP() << "this build has CUDA (the refusal is for CPU-only builds)";
  EXPECT_THROW(Event{}, DeviceUnavailable);
  EXPECT_THROW(ScopedDevice{0}, DeviceUnavailable);
  EXPECT_THROW(detail::require_kernel_image(), DeviceUnavailable);
  EXPECT_EQ(current_cuda_device(), -1);
}

}  // namespace
}  // namespace s3d
