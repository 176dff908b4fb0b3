// NmsEngine's contract per backend, and one CUDA engine reused across every stage combination of the pipeline
// (fused, priority-order and spatial masks, soft-NMS, the filters, max_dets), each call equal to the CPU
// backend: the stages share an engine and its buffers, so a stage that read another's stale data would show.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "nms_test_util.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/detection/nms.hpp"

namespace s3d::detection {
namespace {

TEST(NmsCpuEngine, HasNoDeviceResidentApi) {
  NmsEngine engine(Device(Device::Kind::kCpu));
  EXPECT_TRUE(engine.device().is_cpu());
  const auto s = test::clustered(50, 3);
  const NmsParams p;
  EXPECT_THROW(engine.run_device_async(s.input(), p, nullptr), InvalidArgument);
  EXPECT_THROW(engine.download(), InvalidArgument);
  EXPECT_EQ(engine.device_keep(), nullptr);
  EXPECT_EQ(engine.device_scores(), nullptr);
  EXPECT_EQ(engine.device_keep_count(), nullptr);
  engine.run(s.input(), p);
  const NmsEngine::Stats stats = engine.last_stats();
  EXPECT_EQ(stats.boxes, 0);
  EXPECT_EQ(stats.tile_pairs, 0);
  EXPECT_FALSE(stats.graph);
}

TEST(NmsCpuEngine, MovedEngineRunsAsTheOriginal) {
  const auto s = test::clustered(700, 11, 5, 4);
  NmsParams p;
  p.max_dets = 30;
  const NmsResult expect = nms(Device(Device::Kind::kCpu), s.input(), p);
  NmsEngine first(Device(Device::Kind::kCpu));
  NmsEngine second = std::move(first);
  const NmsResult got = second.run(s.input(), p);
  EXPECT_EQ(got.keep, expect.keep);
  EXPECT_EQ(got.scores, expect.scores);
}

struct Case {
  std::int64_t n;
  NmsMethod method;
  bool rotated;
  bool grouped;
  bool min_score;
  bool pre_top_k;
  bool max_dets;
  std::string name() const {
    return std::to_string(n) + (method == NmsMethod::kHard ? " hard" : " soft") + (rotated ? " rotated" : "") +
           (grouped ? " grouped" : "") + (min_score ? " min_score" : "") + (pre_top_k ? " pre_top_k" : "") +
           (max_dets ? " max_dets" : "");
  }
};

std::vector<Case> pipeline_cases() {
  std::vector<Case> cases;
  // 900: fused path (hard, axis-aligned) or a priority-order mask; 3000: spatial order with a bounded mask;
  // 20000: a mask sized by a read-back count and the thread-per-box scan.
  for (std::int64_t n : {900, 3000, 20000})
    for (NmsMethod method : {NmsMethod::kHard, NmsMethod::kSoftLinear})
      for (bool rotated : {false, true})
        for (int flags = 0; flags < 16; ++flags) {
          if ((method != NmsMethod::kHard || rotated) && n > 3000) continue;  // the CPU oracle is slow there
          cases.push_back({n, method, rotated, (flags & 1) != 0, (flags & 2) != 0, (flags & 4) != 0, (flags & 8) != 0});
        }
  return cases;
}

TEST(NmsCudaEngine, OneEngineThroughEveryStageCombinationMatchesCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Device cpu(Device::Kind::kCpu);
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  for (const Case& c : pipeline_cases()) {
    const auto s = c.rotated ? test::rotated_clustered(c.n, static_cast<std::uint32_t>(c.n) + 5, 7, 6)
                             : test::clustered(c.n, static_cast<std::uint32_t>(c.n) + 5, 7, 6);
    NmsParams p;
    p.method = c.method;
    p.rotated = c.rotated;
    p.min_score = c.min_score ? 0.3f : -INFINITY;
    p.pre_top_k = c.pre_top_k ? 50 : 0;
    p.max_dets = c.max_dets ? 40 : 0;
    const NmsInput in = s.input(c.grouped, true);
    const NmsResult expect = nms(cpu, in, p);
    const NmsResult got = engine.run(in, p);
    EXPECT_EQ(got.keep, expect.keep) << c.name();
    EXPECT_EQ(got.scores, expect.scores) << c.name();
  }
}

}  // namespace
}  // namespace s3d::detection
