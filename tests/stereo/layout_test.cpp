// CUDA only (built when CUDA is): every lane layout of the path-aggregation kernel (the automatic one and
// the forced 4/8/16/32 lanes per scanline that bench_sgm times) gives the CPU's aggregated volume and WTA.
// Uses the library's internal stage launchers and the layouts of s3d_stereo_experimental.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "../../src/stereo/src/backend.hpp"
#include "../../src/stereo/src/sgm_paths_cuda.cuh"
#include "aggregate_variants.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/stream.hpp"
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
  const Stream side;
  const Event fork, join;
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
        sd::cuda::experimental::aggregate(d_cl.data(), d_cr.data(), spec, a.data(), b.data(), c.data(),
                                          {nullptr, side, fork.get(), join.get()});
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
}

// The engine's per-path uint8 pipeline (one launch for all directions, WTA summing the directions' bytes)
// against the CPU's aggregated volume + WTA: both views, negative min disparity, padded and unpadded D,
// odd sizes, uniqueness, subpixel and confidence bit for bit; every lane layout of the cost-volume variant.
TEST(SgmLayouts, PerPathPipelineMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  namespace sd = s3d::stereo::detail;
  const Device cpu;
  for (auto [W, H] : {std::pair{211, 97}, std::pair{67, 300}}) {
    const std::size_t n = static_cast<std::size_t>(W) * H;
    const auto l = test::random_image<std::uint8_t>(W, H, 71), r = test::random_image<std::uint8_t>(W, H, 72);
    const auto cl = stages::census(cpu, l.view(), CensusKind::kFull, 9, 7);
    const auto cr = stages::census(cpu, r.view(), CensusKind::kFull, 9, 7);
    DeviceBuffer<std::uint64_t> d_cl, d_cr;
    d_cl.copy_from_host(cl);
    d_cr.copy_from_host(cr);
    for (int D : {16, 24, 64, 100, 128, 200})
      for (int paths : {4, 8})
        for (stages::View view : {stages::View::kLeft, stages::View::kRight}) {
          if (D > W) continue;
          SgmParams p;
          p.disparities = D;
          p.paths = paths;
          p.min_disparity = -3;
          p.uniqueness = 5;
          const bool right = view == stages::View::kRight;
          SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H) + " D " + std::to_string(D) + " paths " +
                       std::to_string(paths) + (right ? " right" : " left"));
          const auto ref = stages::aggregate(cpu, cl, cr, W, H, p, view);
          std::vector<float> ref_disp, ref_conf;
          stages::wta(cpu, ref, W, H, p, view, ref_disp, &ref_conf);
          const sd::MatchSpec spec = sd::make_match_spec(p, W, H, right);
          ASSERT_TRUE(sd::cuda::per_path_fits(spec));
          DeviceBuffer<std::uint8_t> vol(sd::cuda::per_path_bytes(spec)), cost(sd::cuda::per_path_cost_bytes(spec));
          // on the fly, then the cost volume with each lane layout of its path kernel
          for (int variant = 0; variant < 4; ++variant) {
            const bool with_cost = variant > 0;
            const auto lanes = variant == 1   ? sd::cuda::experimental::PerPathLanes::kWide
                               : variant == 2 ? sd::cuda::experimental::PerPathLanes::kNarrowHorizontal
                                              : sd::cuda::experimental::PerPathLanes::kNarrowAll;
            SCOPED_TRACE(with_cost ? "cost volume, lanes " + std::to_string(static_cast<int>(lanes)) : "on the fly");
            DeviceBuffer<float> disp(n), conf(n);
            S3D_CUDA_CHECK(cudaMemset(vol.data(), 0xab, vol.size()));
            sd::cuda::experimental::aggregate_per_path(right ? d_cr.data() : d_cl.data(),
                                                       right ? d_cl.data() : d_cr.data(), spec,
                                                       with_cost ? cost.data() : nullptr, vol.data(), nullptr, lanes);
            sd::cuda::wta_per_path(vol.data(), spec, disp.data(), W, conf.data(), W, nullptr);
            std::string where;
            EXPECT_TRUE(test::bit_equal(disp.to_host(), ref_disp, W, &where)) << where;
            EXPECT_TRUE(test::bit_equal(conf.to_host(), ref_conf, W, &where)) << where;
            // the bytes themselves: their sum over the directions is the CPU's volume
            if (D == 100 && paths == 8) {
              const int pitch = sd::cuda::per_path_pitch(D);
              std::vector<std::uint8_t> bytes(sd::cuda::per_path_bytes(spec));
              S3D_CUDA_CHECK(cudaMemcpy(bytes.data(), vol.data(), bytes.size(), cudaMemcpyDeviceToHost));
              std::size_t bad = 0;
              for (std::size_t i = 0; i < n; ++i)
                for (int d = 0; d < D; ++d) {
                  int sum = 0;
                  for (int q = 0; q < paths; ++q) sum += bytes[(q * n + i) * pitch + d];
                  bad += sum != ref[i * D + d];
                }
              EXPECT_EQ(bad, 0u);
            }
          }
        }
  }
  // costs that do not fit a byte: the engine keeps the uint16 kernels
  SgmParams big;
  big.p2 = 250;
  EXPECT_FALSE(sd::cuda::per_path_fits(sd::make_match_spec(big, 211, 97, false)));
}

}  // namespace
}  // namespace s3d::stereo
