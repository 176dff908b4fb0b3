// CUDA only (built when CUDA is): every lane layout of the path-aggregation kernel (the automatic one and
// the forced 4/8/16/32 lanes per scanline that bench_sgm times) gives the CPU's aggregated volume and WTA.
// Uses the library's internal stage launchers.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "../../src/stereo/src/backend.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/stereo/stages.hpp"
#include "stereo_test_util.hpp"

namespace s3d::stereo {
namespace {

TEST(SgmLayouts, EveryLaneLayoutMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  namespace sd = s3d::stereo::detail;
  const Device cpu;
  const int W = 211, H = 97;
  const std::size_t n = static_cast<std::size_t>(W) * H;
  const auto l = test::random_image<std::uint8_t>(W, H, 61), r = test::random_image<std::uint8_t>(W, H, 62);
  const auto cl = stages::census(cpu, l.view(), CensusKind::kFull, 9, 7);
  const auto cr = stages::census(cpu, r.view(), CensusKind::kFull, 9, 7);
  DeviceBuffer<std::uint64_t> d_cl, d_cr;
  d_cl.copy_from_host(cl);
  d_cr.copy_from_host(cr);
  cudaStream_t side;
  cudaEvent_t fork, join;
  S3D_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  S3D_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  S3D_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  for (int D : {16, 100, 128, 200})
    for (int paths : {4, 8}) {
      SgmParams p;
      p.disparities = D;
      p.paths = paths;
      p.min_disparity = -3;
      const auto ref = stages::aggregate(cpu, cl, cr, W, H, p, stages::View::kLeft);
      std::vector<float> ref_disp;
      stages::wta(cpu, ref, W, H, p, stages::View::kLeft, ref_disp, nullptr);
      for (int lanes : {0, 4, 8, 16, 32}) {
        SCOPED_TRACE("D " + std::to_string(D) + " paths " + std::to_string(paths) + " lanes " + std::to_string(lanes));
        sd::MatchSpec spec = sd::make_match_spec(p, W, H, false);
        spec.lanes = lanes;
        const int vp = sd::cuda::volume_pitch(D, lanes);
        ASSERT_GE(vp, D);
        DeviceBuffer<std::uint16_t> a(n * vp), b(n * vp), c(n * vp);
        DeviceBuffer<float> disp(n);
        sd::cuda::aggregate(d_cl.data(), d_cr.data(), spec, a.data(), b.data(), c.data(), {nullptr, side, fork, join});
        sd::cuda::wta(a.data(), b.data(), c.data(), spec, disp.data(), W, nullptr, 0, nullptr);
        sd::cuda::add_volumes(a.data(), b.data(), n * vp, nullptr);
        sd::cuda::add_volumes(a.data(), c.data(), n * vp, nullptr);
        std::vector<std::uint16_t> got(n * D);
        S3D_CUDA_CHECK(cudaMemcpy2D(got.data(), D * sizeof(std::uint16_t), a.data(), vp * sizeof(std::uint16_t),
                                    D * sizeof(std::uint16_t), n, cudaMemcpyDeviceToHost));
        EXPECT_TRUE(got == ref);
        std::string where;
        EXPECT_TRUE(test::bit_equal(disp.to_host(), ref_disp, W, &where)) << where;
      }
    }
  cudaStreamDestroy(side);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
}

}  // namespace
}  // namespace s3d::stereo
