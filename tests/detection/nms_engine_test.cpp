// NmsEngine's contract per backend, and one CUDA engine reused across every stage combination of the pipeline
// (fused, priority-order and spatial masks, soft-NMS, the filters, max_dets), each call equal to the CPU
// backend: the stages share an engine and its buffers, so a stage that read another's stale data would show.
// Sizes go large -> small -> large, so a small call runs on buffers a larger one left filled. The
// device-resident API is checked the same way: eager, captured and replayed graph calls, on two streams.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "nms_test_util.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/stream.hpp"
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
  // 20000: a mask sized by a read-back count and the thread-per-box scan; 900: fused path (hard, axis-aligned)
  // or a priority-order mask; 3000: the fused grid path (hard, axis-aligned, no active pre_top_k), else spatial
  // order with a bounded mask. Large first: the smaller calls then run
  // on buffers a larger call filled, where reading stale entries would change the result.
  for (std::int64_t n : {20000, 900, 3000})
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

TEST(NmsCudaEngine, DeviceResidentGraphReplayAndStreamChangesMatchCpu) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const Device cpu(Device::Kind::kCpu);
  const Stream first_stream, second_stream;
  test::DeviceBoxSet large, small;
  NmsEngine engine(Device(Device::Kind::kCuda, 0));  // destroyed first: it waits for both streams
  NmsParams p;
  p.max_dets = 100;  // without image ids: applied on the device, still capturable
  // 3000 boxes: the fused grid path; 900: the fused path. Both are sync-free, so the second identical
  // call is captured and the third replayed.
  const test::BoxSet large_sets[] = {test::clustered(3000, 41, 5, 6), test::clustered(3000, 42, 5, 6)};
  const test::BoxSet small_sets[] = {test::clustered(900, 43, 5, 6), test::clustered(900, 44, 5, 6)};
  struct Step {
    const test::BoxSet* set;
    test::DeviceBoxSet* device;
    StreamHandle stream;
    const char* name;
  };
  const Step steps[] = {
      {&large_sets[0], &large, first_stream, "large, first stream"},
      {&small_sets[0], &small, first_stream, "small after large"},
      {&large_sets[1], &large, first_stream, "large again, new boxes"},
      {&small_sets[1], &small, second_stream, "small, second stream"},
      {&large_sets[0], &large, second_stream, "large, second stream"},
  };
  // The fused path always captures; the mask path may not (the driver can refuse its cooperative scan), and
  // a refused capture turns graphs off for the engine: the fused path is checked for a graph only while none was.
  bool graphs_on = true;
  for (const Step& step : steps) {
    const NmsResult expect = nms(cpu, step.set->input(true, false), p);
    ASSERT_FALSE(expect.keep.empty()) << step.name;
    step.device->upload(*step.set, step.stream);
    for (int call = 0; call < 3; ++call) {  // eager, captured, replayed
      engine.run_device_async(step.device->input, p, step.stream);
      const NmsResult got = engine.download(step.stream);
      EXPECT_EQ(got.keep, expect.keep) << step.name << ", call " << call;
      EXPECT_EQ(got.scores, expect.scores) << step.name << ", call " << call;
    }
    if (step.set->size() <= 1024) {
      EXPECT_EQ(engine.last_stats().graph, graphs_on) << step.name;
    } else if (!engine.last_stats().graph) {
      graphs_on = false;
      std::printf("%s: the driver refused to capture the mask path, graphs are off\n", step.name);
    }
  }
  // A replay reads the buffers it was captured on: new boxes in the same memory give the new result. The last
  // step left a graph of the large call; the fused small call is captured anew on the second stream first.
  for (test::DeviceBoxSet* device : {&large, &small}) {
    const test::BoxSet replacement = test::clustered(device->input.count, 45, 5, 6);
    if (device == &small) {
      for (int call = 0; call < 2; ++call) engine.run_device_async(small.input, p, second_stream);
      engine.download(second_stream);
    }
    device->upload(replacement, second_stream);
    engine.run_device_async(device->input, p, second_stream);
    if (device == &small) EXPECT_EQ(engine.last_stats().graph, graphs_on);
    const NmsResult got = engine.download(second_stream);
    const NmsResult expect = nms(cpu, replacement.input(true, false), p);
    EXPECT_EQ(got.keep, expect.keep) << device->input.count << " boxes replaced";
    EXPECT_EQ(got.scores, expect.scores) << device->input.count << " boxes replaced";
  }
}

}  // namespace
}  // namespace s3d::detection
