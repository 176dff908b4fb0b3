// bench_nms_cpu: Google Benchmark timings of the CPU NMS backend on the same synthetic sets as bench_nms.
#include <benchmark/benchmark.h>

#include "nms_gen.hpp"
#include "nms_test_util.hpp"
#include "s3d/detection/nms.hpp"

namespace {

using namespace s3d::detection;

void run(benchmark::State& state, bool clustered, int classes, NmsMethod method) {
  const auto n = state.range(0);
  const auto b = bench::generate(n, clustered, classes, static_cast<std::uint32_t>(n) + 1);
  NmsInput in;
  in.boxes = b.xyxy.data();
  in.scores = b.scores.data();
  in.group_ids = b.groups.empty() ? nullptr : b.groups.data();
  in.count = n;
  NmsParams p;
  p.method = method;
  NmsEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
  std::size_t kept = 0;
  for (auto _ : state) {
    auto r = engine.run(in, p);
    kept = r.keep.size();
    benchmark::DoNotOptimize(r.keep.data());
  }
  state.counters["kept"] = static_cast<double>(kept);
  state.SetItemsProcessed(state.iterations() * n);
}

// The 20k-box single group of the NmsDeviceTest.LargeSingleGroupMatchesReference case (same boxes, same
// seed): the CPU grid path for groups above 512 boxes. Expected well under a second per call; measured here,
// not asserted in the correctness test, because a wall-clock bound there depends on the machine's load.
void BM_NmsCpuLargeSingleGroup(benchmark::State& state) {
  const auto boxes = s3d::detection::test::clustered(20011, 4242, 1, 0, 0.02f, 3000.f);
  NmsParams p;
  p.iou_threshold = 0.5f;
  NmsEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
  std::size_t kept = 0;
  for (auto _ : state) {
    auto r = engine.run(boxes.input(false, false), p);
    kept = r.keep.size();
    benchmark::DoNotOptimize(r.keep.data());
  }
  state.counters["kept"] = static_cast<double>(kept);
  state.SetItemsProcessed(state.iterations() * boxes.size());
}

void BM_NmsCpuClustered(benchmark::State& s) { run(s, true, 1, NmsMethod::kHard); }
void BM_NmsCpuUniform(benchmark::State& s) { run(s, false, 1, NmsMethod::kHard); }
void BM_NmsCpuPerClass80(benchmark::State& s) { run(s, true, 80, NmsMethod::kHard); }
void BM_NmsCpuSoftGaussian(benchmark::State& s) { run(s, true, 1, NmsMethod::kSoftGaussian); }

BENCHMARK(BM_NmsCpuClustered)->Arg(1000)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NmsCpuUniform)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NmsCpuPerClass80)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NmsCpuLargeSingleGroup)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NmsCpuSoftGaussian)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
