// Ties in the 3x3 median: with quantized disparities many neighbours are equal, and +0.0 == -0.0 compare
// equal while their bits differ, so the backends must pick the same element among equals (the CPU's stable
// insertion sort; the CUDA kernel selects by rank). Random maps rarely tie, hence this test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/stages.hpp"
#include "stereo_test_util.hpp"
#include "test_support.hpp"

namespace s3d::stereo {
namespace {

class MedianTies : public ::testing::TestWithParam<Device> {};

TEST_P(MedianTies, QuantizedValuesAndSignedZerosMatchCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  const int W = 97, H = 61;  // not a multiple of the 32 x 8 block
  const float values[] = {kInvalidDisparity, 0.0f, -0.0f, 1.0f, 1.5f, 1.0f, -0.0f, 2.0f};
  std::vector<float> map(static_cast<std::size_t>(W) * H);
  std::uint32_t state = 12345u;
  for (float& v : map) {
    state = state * 1664525u + 1013904223u;
    v = values[(state >> 24) % 8];
  }
  const std::vector<float> got = stages::median3x3(GetParam(), map, W, H);
  const std::vector<float> want = stages::median3x3(Device(Device::Kind::kCpu), map, W, H);
  std::string where;
  EXPECT_TRUE(test::bit_equal(got, want, W, &where)) << where;
  // the case is exercised: both zeros survive the median somewhere, and equal values abound
  int negative_zero = 0, positive_zero = 0;
  for (float v : want) {
    if (v == 0.0f) (std::signbit(v) ? negative_zero : positive_zero) += 1;
  }
  EXPECT_GT(negative_zero, 0);
  EXPECT_GT(positive_zero, 0);
}

INSTANTIATE_TEST_SUITE_P(Devices, MedianTies, ::testing::ValuesIn(test::test_devices()), test::device_test_name);

}  // namespace
}  // namespace s3d::stereo
