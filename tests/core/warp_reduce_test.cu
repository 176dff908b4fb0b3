// The warp reductions of cuda_arch.cuh against the host. This file is compiled twice: as is (redux on
// sm_80+) and with S3D_PORTABLE_KERNELS (the shuffle butterfly older GPUs run), so both paths execute here.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "s3d/core/cuda_arch.cuh"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"

namespace s3d {
namespace {

__global__ void warp_reduce_kernel(const unsigned* in, unsigned* out_min, unsigned* out_max, int* out_imin) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned v = in[i];
  const unsigned mn = detail::warp_reduce_min(v), mx = detail::warp_reduce_max(v);
  const int imn = detail::warp_reduce_min(static_cast<int>(v));
  if ((threadIdx.x & 31) == 0) {
    out_min[i / 32] = mn;
    out_max[i / 32] = mx;
    out_imin[i / 32] = imn;
  }
}

TEST(WarpReduce, MatchesTheHostOnEveryWarp) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  resolve_device(Device::parse("cuda"));
  constexpr int kWarps = 512;
  std::mt19937 rng(7);
  std::vector<unsigned> in(kWarps * 32);
  for (auto& v : in) v = rng();
  for (int l = 0; l < 32; ++l) in[l] = 5u;                    // all equal
  for (int l = 0; l < 32; ++l) in[32 + l] = 0x80000000u + l;  // sign bit: signed and unsigned orders differ
  DeviceBuffer<unsigned> d_in, d_min(kWarps), d_max(kWarps);
  DeviceBuffer<int> d_imin(kWarps);
  d_in.copy_from_host(in);
  warp_reduce_kernel<<<kWarps / 4, 128>>>(d_in.data(), d_min.data(), d_max.data(), d_imin.data());
  S3D_CUDA_CHECK_LAUNCH();
  const auto mn = d_min.to_host(), mx = d_max.to_host();
  const auto imn = d_imin.to_host();
  for (int w = 0; w < kWarps; ++w) {
    const auto first = in.begin() + w * 32, last = first + 32;
    ASSERT_EQ(mn[w], *std::min_element(first, last)) << "warp " << w;
    ASSERT_EQ(mx[w], *std::max_element(first, last)) << "warp " << w;
    int expect = static_cast<int>(*first);
    for (auto it = first; it != last; ++it) expect = std::min(expect, static_cast<int>(*it));
    ASSERT_EQ(imn[w], expect) << "warp " << w;
  }
}

}  // namespace
}  // namespace s3d
