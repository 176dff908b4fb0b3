// s3d::stereo memory estimates (sgm_memory.hpp) against what the engines really allocate: for each backend,
// sgm_engine_memory equals the engine's own buffers (SgmEngine::allocated) plus, on the CPU, the compute
// scratch, over parameter sets that switch every optional buffer and layout; the CPU aggregation's
// per-thread rows stay within their bound; the pipeline adds exactly its slots. Per-device (label gpu).
#include <gtest/gtest.h>

#include <omp.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "engine_impl.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_memory.hpp"
#include "s3d/stereo/sgm_pipeline.hpp"
#include "stereo_test_util.hpp"
#include "test_support.hpp"

namespace s3d::stereo {
namespace {

class SgmMemoryDevice : public ::testing::TestWithParam<Device> {};

// Every switch of the constructors' sizes: D (pitch rounding), paths, optional buffers, and P2 large
// enough that path costs exceed a byte (the CUDA fallback volumes, the CPU's uint16 rows).
std::vector<SgmParams> variants() {
  std::vector<SgmParams> out;
  SgmParams p;
  out.push_back(p);
  p.disparities = 100;
  p.paths = 4;
  p.lr_check = false;
  p.speckle_size = 0;
  out.push_back(p);
  p = SgmParams{};
  p.disparities = 48;
  p.confidence = true;
  p.p2 = 250;
  out.push_back(p);
  p = SgmParams{};
  p.disparities = 256;
  p.census = CensusKind::kCenterSymmetric;
  out.push_back(p);
  return out;
}

std::size_t scratch_bytes(const Device& device, const SgmParams& p, int w, int h) {
  return device.is_cuda() ? 0 : detail::cpu_compute_scratch_bytes(p, w, h);
}

TEST_P(SgmMemoryDevice, EngineEstimateEqualsItsAllocation) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  const int sizes[][2] = {{333, 97}, {640, 480}, {1242, 375}};
  for (const SgmParams& p : variants()) {
    for (const auto& s : sizes) {
      if (p.disparities > s[0]) continue;
      SgmEngine engine(GetParam(), p, s[0], s[1]);
      const SgmMemory got = engine.allocated();
      const SgmMemory want = sgm_engine_memory(GetParam(), p, s[0], s[1]);
      EXPECT_EQ(want.host, got.host + scratch_bytes(GetParam(), p, s[0], s[1]))
          << "D " << p.disparities << " paths " << p.paths << " " << s[0] << "x" << s[1];
      EXPECT_EQ(want.device, got.device) << "D " << p.disparities << " " << s[0] << "x" << s[1];
      // The volumes dominate: about 3*W*H*D bytes on the CPU, (paths + 1)*W*H*pitch on a GPU.
      const std::size_t volume = static_cast<std::size_t>(s[0]) * s[1] * p.disparities;
      EXPECT_GE(GetParam().is_cuda() ? want.device : want.host, 3 * volume);
    }
  }
}

TEST_P(SgmMemoryDevice, PipelineAddsItsSlots) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  SgmParams p;
  p.disparities = 64;
  p.confidence = true;
  const int w = 320, h = 240;
  const SgmMemory engine = sgm_engine_memory(GetParam(), p, w, h);
  const SgmMemory pipe = sgm_pipeline_memory(GetParam(), p, w, h, 3);
  const std::size_t slot = 2 * w * h * sizeof(std::uint16_t) + 2 * w * h * sizeof(float);
  EXPECT_EQ(pipe.host, engine.host + 3 * slot);
  EXPECT_EQ(pipe.device, engine.device + (GetParam().is_cuda() ? 3 * slot : 0));
  SgmPipeline built(GetParam(), p, w, h, 3);  // the sizes it was given are the sizes it allocates
  EXPECT_EQ(built.engine().allocated().device, engine.device);
}

// The CPU aggregation's row buffers live per thread: after matching on a fresh thread (one OpenMP thread,
// so both sweeps use its buffers) they hold no more than the bound the estimate counts per thread.
TEST(SgmMemoryCpu, AggregationRowsStayWithinTheirBound) {
  for (const SgmParams& p : variants()) {
    const int w = 400, h = 120;
    test::Image<std::uint8_t> l, r;
    test::shifted_pair(w, h, 5, 7u, l, r);
    std::size_t held = 0;
    std::thread worker([&] {
      omp_set_num_threads(1);
      SgmEngine engine(Device(), p, w, h);
      engine.compute(l.view(), r.view());
      held = detail::cpu::this_thread_sweep_bytes();
    });
    worker.join();
    const std::size_t bound = detail::cpu::sweep_buffer_bytes(detail::make_match_spec(p, w, h, false));
    EXPECT_GT(held, 0u);
    EXPECT_LE(held, bound) << "D " << p.disparities << " paths " << p.paths;
    EXPECT_GE(held * 2, bound) << "the bound is loose: D " << p.disparities;
  }
}

TEST(SgmMemoryCpu, LargePairNeedsAboutThreeBytesPerCell) {
  SgmParams p;
  p.disparities = 256;
  const SgmMemory m = sgm_engine_memory(Device(), p, 8192, 8192);
  const double cells = 8192.0 * 8192.0 * 256;
  EXPECT_GT(static_cast<double>(m.host), 3.0 * cells);
  EXPECT_LT(static_cast<double>(m.host), 3.2 * cells);  // "8192^2 at -D 256 needs about 32 GB" (x1.6 here)
  EXPECT_EQ(m.device, 0u);
}

INSTANTIATE_TEST_SUITE_P(Devices, SgmMemoryDevice, ::testing::ValuesIn(test::test_devices()), test::device_test_name);

}  // namespace
}  // namespace s3d::stereo
