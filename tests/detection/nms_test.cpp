// NMS semantics, parameters, edge cases, CPU vs CUDA, rotated and soft-NMS against straightforward references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "nms_test_util.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/detection/nms.hpp"
#include "test_support.hpp"

namespace s3d::detection {
namespace {

using test::BoxSet;

class NmsDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }
  NmsResult run(const BoxSet& s, const NmsParams& p, bool groups = true, bool images = true) {
    return nms(GetParam(), s.input(groups, images), p);
  }
};

TEST(NmsParamsTest, ValidateNamesTheField) {
  NmsParams p;
  EXPECT_NO_THROW(p.validate());
  auto expect_field = [](NmsParams q, const char* field) {
    try {
      q.validate();
      ADD_FAILURE() << "no throw for " << field;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  NmsParams q = p;
  q.iou_threshold = 1.5f;
  expect_field(q, "iou_threshold");
  q = p;
  q.iou_threshold = NAN;
  expect_field(q, "iou_threshold");
  q = p;
  q.iou_threshold = 0.f;
  q.suppress_at_equal = true;
  expect_field(q, "iou_threshold");
  q = p;
  q.pixel_offset = 2;
  expect_field(q, "pixel_offset");
  q = p;
  q.rotated = true;
  q.pixel_offset = 1;
  expect_field(q, "pixel_offset");
  q = p;
  q.sigma = 0.f;
  expect_field(q, "sigma");
  q = p;
  q.soft_min_score = -1.f;
  expect_field(q, "soft_min_score");
  q = p;
  q.min_score = NAN;
  expect_field(q, "min_score");
  q = p;
  q.pre_top_k = -1;
  expect_field(q, "pre_top_k");
  q = p;
  q.max_dets = -2;
  expect_field(q, "max_dets");
}

TEST(NmsIouTest, MatchesHandComputedValues) {
  NmsParams p;
  const float a[4] = {0, 0, 10, 10}, b[4] = {5, 0, 15, 10};
  EXPECT_FLOAT_EQ(nms_iou(a, b, p), 50.f / 150.f);
  const float z[4] = {3, 3, 3, 8};  // zero area: inter 0
  EXPECT_EQ(nms_iou(a, z, p), 0.f);
  EXPECT_TRUE(std::isnan(nms_iou(z, z, p)));  // 0/0, as torchvision
  p.pixel_offset = 1;
  EXPECT_FLOAT_EQ(nms_iou(a, b, p), 66.f / (121.f + 121.f - 66.f));
  NmsParams r;
  r.rotated = true;
  const float ra[5] = {0, 0, 2, 2, 0}, rb[5] = {1, 0, 2, 2, 0};
  EXPECT_NEAR(nms_iou(ra, rb, r), 2.f / 6.f, 1e-6);
  // a square and the same square turned by 45 degrees: inter = 8 (sqrt 2 - 1) for side 2
  const float rc[5] = {0, 0, 2, 2, static_cast<float>(M_PI / 4)};
  const double inter = 8.0 * (std::sqrt(2.0) - 1.0);
  EXPECT_NEAR(nms_iou(ra, rc, r), inter / (8.0 - inter), 1e-6);
  // a 90-degree turn of a w x h box is the h x w box
  const float rd[5] = {5, 5, 4, 2, static_cast<float>(M_PI / 2)}, re[5] = {5, 5, 2, 4, 0};
  EXPECT_NEAR(nms_iou(rd, re, r), 1.0, 1e-6);
  // angle 0 agrees with the axis-aligned IoU
  const float ax[4] = {10, 20, 40, 35}, bx[4] = {25, 22, 50, 44};
  const float rax[5] = {25, 27.5f, 30, 15, 0}, rbx[5] = {37.5f, 33, 25, 22, 0};
  EXPECT_NEAR(nms_iou(rax, rbx, r), nms_iou(ax, bx, NmsParams{}), 1e-6);
  const float far[5] = {100, 100, 2, 2, 0.3f};
  EXPECT_EQ(nms_iou(ra, far, r), 0.f);
}

TEST_P(NmsDeviceTest, EmptyAndSingleBox) {
  BoxSet s;
  NmsParams p;
  EXPECT_TRUE(run(s, p).keep.empty());
  s.boxes = {1, 2, 3, 4};
  s.scores = {0.5f};
  const auto r = run(s, p);
  ASSERT_EQ(r.keep.size(), 1u);
  EXPECT_EQ(r.keep[0], 0);
  EXPECT_EQ(r.scores[0], 0.5f);
}

TEST_P(NmsDeviceTest, TorchvisionTiesAndDegenerateBoxes) {
  BoxSet s;
  // 0,1 identical with equal scores: lower index wins. 2 zero-area inside 0. 3 inverted. 4 IoU exactly 0.5.
  s.boxes = {0, 0, 10, 10, 0, 0, 10, 10, 5, 5, 5, 9, 8, 8, 2, 2, 0, 0, 10, 5};
  s.scores = {0.9f, 0.9f, 0.95f, 0.99f, 0.8f};
  NmsParams p;  // thr 0.5, strict
  auto r = run(s, p);
  EXPECT_EQ(r.keep, (std::vector<std::int64_t>{3, 2, 0, 4}));
  p.suppress_at_equal = true;  // IoU(0,4) = 0.5 >= 0.5 now suppresses
  r = run(s, p);
  EXPECT_EQ(r.keep, (std::vector<std::int64_t>{3, 2, 0}));
}

// Integer boxes give exact rational IoUs, many exactly at the threshold or rounding onto it, and many pairs that
// touch without overlapping (the mask kernels' candidate pre-test): every path keeps what the reference keeps,
// with > and with >=. The sizes take the one-block fused path, the fused grid path and the general pipeline.
TEST_P(NmsDeviceTest, TiedAndTouchingIousMatchTheReference) {
  for (const int n : {900, 3001, 17003}) {
    std::mt19937 rng(static_cast<unsigned>(n));
    const int span = n < 2000 ? 40 : (n < 10000 ? 80 : 200);
    std::uniform_int_distribution<int> at(0, span), size(1, 8);
    std::uniform_real_distribution<float> score(0.f, 1.f);
    BoxSet s;
    for (int i = 0; i < n; ++i) {
      const int x = at(rng), y = at(rng);
      s.boxes.insert(s.boxes.end(), {static_cast<float>(x), static_cast<float>(y), static_cast<float>(x + size(rng)),
                                     static_cast<float>(y + size(rng))});
      s.scores.push_back(score(rng));
    }
    for (const float thr : {0.5f, 1.f / 3.f, 0.3f, 2.f / 7.f, 0.6f})
      for (const bool ge : {false, true}) {
        if (n > 10000 && thr != 0.5f) continue;  // the general pipeline: ties at 0.5 only (the CPU reference is slow)
        NmsParams p;
        p.iou_threshold = thr;
        p.suppress_at_equal = ge;
        EXPECT_EQ(run(s, p).keep, test::reference_hard(s, p)) << "n=" << n << " thr=" << thr << " ge=" << ge;
      }
  }
}

TEST_P(NmsDeviceTest, PixelOffsetChangesTheIou) {
  BoxSet s;
  s.boxes = {0, 0, 9, 9, 5, 0, 14, 9};  // +1: inter 5x10=50, union 150 -> 1/3; no +1: 36/126
  s.scores = {0.9f, 0.8f};
  NmsParams p;
  p.iou_threshold = 0.3f;
  EXPECT_EQ(run(s, p).keep.size(), 2u);  // 0.2857 <= 0.3
  p.pixel_offset = 1;
  EXPECT_EQ(run(s, p).keep.size(), 1u);  // 0.333 > 0.3
}

TEST_P(NmsDeviceTest, RandomClusteredMatchesReference) {
  for (int trial = 0; trial < 6; ++trial) {
    const std::int64_t n = 63 + trial * 731;  // odd sizes, not multiples of 64
    const auto s = test::clustered(n, 1000 + trial, trial % 2 ? 5 : 1, trial % 3 == 0 ? 8 : 0);
    for (float thr : {0.f, 0.3f, 0.5f, 0.7f}) {
      NmsParams p;
      p.iou_threshold = thr;
      EXPECT_EQ(run(s, p).keep, test::reference_hard(s, p)) << "n=" << n << " thr=" << thr;
    }
  }
}

TEST_P(NmsDeviceTest, EachParameterMatchesReference) {
  const auto s = test::clustered(3001, 77, 9, 16);
  std::vector<NmsParams> cases;
  NmsParams p;
  p.iou_threshold = 0.6f;
  cases.push_back(p);
  p.suppress_at_equal = true;
  cases.push_back(p);
  p = {};
  p.pixel_offset = 1;
  cases.push_back(p);
  p = {};
  p.min_score = 0.4f;
  cases.push_back(p);
  p = {};
  p.pre_top_k = 37;
  cases.push_back(p);
  p = {};
  p.max_dets = 11;
  cases.push_back(p);
  p = {};
  p.min_score = 0.2f;
  p.pre_top_k = 100;
  p.max_dets = 25;
  p.iou_threshold = 0.45f;
  cases.push_back(p);
  for (std::size_t c = 0; c < cases.size(); ++c) {
    EXPECT_EQ(run(s, cases[c]).keep, test::reference_hard(s, cases[c])) << "case " << c;
    EXPECT_EQ(run(s, cases[c], false, false).keep, test::reference_hard(s, cases[c], false, false)) << "case " << c;
  }
}

// Exercises the CPU grid path (groups > 512 boxes) and many CUDA tiles. Its speed is bench_nms_cpu's
// BM_NmsCpuLargeSingleGroup (and bench_nms on the GPU), not a bound here.
TEST_P(NmsDeviceTest, LargeSingleGroupMatchesReference) {
  const auto s = test::clustered(20011, 4242, 1, 0, 0.02f, 3000.f);
  NmsParams p;
  p.iou_threshold = 0.5f;
  EXPECT_EQ(run(s, p, false, false).keep, test::reference_hard(s, p, false, false));
}

TEST_P(NmsDeviceTest, NanScoresAreDropped) {
  BoxSet s;
  s.boxes = {0, 0, 10, 10, 0, 0, 10, 10, 20, 20, 30, 30};
  s.scores = {NAN, 0.5f, 0.7f};
  const auto r = run(s, NmsParams{});
  EXPECT_EQ(r.keep, (std::vector<std::int64_t>{2, 1}));
}

TEST_P(NmsDeviceTest, NonFiniteCoordinateIsADataError) {
  BoxSet s;
  s.boxes = {0, 0, 10, 10, 0, NAN, 10, 10};
  s.scores = {0.5f, 0.7f};
  EXPECT_THROW(run(s, NmsParams{}), DataError);
}

TEST_P(NmsDeviceTest, RotatedMatchesBruteForce) {
  for (int trial = 0; trial < 3; ++trial) {
    const auto s = test::rotated_clustered(501 + 700 * trial, 9 + trial, trial == 1 ? 4 : 1, trial == 2 ? 6 : 0);
    for (float thr : {0.1f, 0.5f}) {
      NmsParams p;
      p.rotated = true;
      p.iou_threshold = thr;
      EXPECT_EQ(run(s, p).keep, test::reference_hard(s, p)) << trial << " " << thr;
    }
  }
}

TEST_P(NmsDeviceTest, SoftLinearMatchesReference) {
  const auto s = test::clustered(1500, 5, 3, 0);
  NmsParams p;
  p.method = NmsMethod::kSoftLinear;
  p.iou_threshold = 0.3f;
  p.soft_min_score = 0.05f;
  const auto r = run(s, p);
  const auto ref = test::reference_soft(s, p);
  EXPECT_EQ(r.keep, ref.keep);
  EXPECT_EQ(r.scores, ref.scores);
}

TEST_P(NmsDeviceTest, SoftGaussianMatchesReference) {
  const auto s = test::clustered(1200, 6, 2, 0);
  NmsParams p;
  p.method = NmsMethod::kSoftGaussian;
  p.sigma = 0.5f;
  p.soft_min_score = 0.01f;
  const auto r = run(s, p);
  const auto ref = test::reference_soft(s, p);
  ASSERT_EQ(r.keep.size(), ref.keep.size());
  EXPECT_EQ(r.keep, ref.keep);
  for (std::size_t k = 0; k < r.scores.size(); ++k) EXPECT_NEAR(r.scores[k], ref.scores[k], 1e-6f * ref.scores[k]);
}

TEST_P(NmsDeviceTest, SoftRotatedAndMaxDets) {
  auto s = test::rotated_clustered(700, 12, 3, 0);
  NmsParams p;
  p.rotated = true;
  p.method = NmsMethod::kSoftLinear;
  p.iou_threshold = 0.2f;
  const auto ref = test::reference_soft(s, p);
  EXPECT_EQ(run(s, p).keep, ref.keep);
  p.max_dets = 50;
  const auto r = run(s, p, true, false);
  ASSERT_EQ(r.keep.size(), 50u);
  EXPECT_EQ(r.keep, std::vector<std::int64_t>(ref.keep.begin(), ref.keep.begin() + 50));
}

// CUDA-only comparisons against the CPU backend (bit-identical keep lists and scores).
/// `calls` device-resident runs of `s` (with its groups) on `engine` and `stream` (eager, captured, then
/// replayed), each checked against the CPU backend; returns how many ran as a graph.
int device_calls_match_cpu(NmsEngine& engine, const BoxSet& s, const NmsParams& p, int calls, Stream& stream) {
  test::DeviceBoxSet on_device;
  on_device.upload(s, stream);
  const auto expect = nms(Device(Device::Kind::kCpu), s.input(true, false), p);
  int graphs = 0;
  for (int call = 0; call < calls; ++call) {
    engine.run_device_async(on_device.input, p, stream);
    graphs += engine.last_stats().graph ? 1 : 0;
    const auto got = engine.download(stream);
    EXPECT_EQ(got.keep, expect.keep) << s.size() << " boxes, call " << call;
    EXPECT_EQ(got.scores, expect.scores) << s.size() << " boxes, call " << call;
  }
  stream.synchronize();
  return graphs;
}

class NmsCudaVsCpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(NmsCudaVsCpuTest, ClusteredWithTiesDuplicatesDegenerate) {
  const Device cpu(Device::Kind::kCpu), gpu(Device::Kind::kCuda, 0);
  for (int trial = 0; trial < 8; ++trial) {
    const auto s = test::clustered(5000 + 9973 * trial, 31 + trial, trial % 4 == 0 ? 1 : 80, trial % 2 ? 4 : 0, 0.05f,
                                   2000.f, 5 + 10 * trial);
    for (NmsMethod method : {NmsMethod::kHard, NmsMethod::kSoftGaussian}) {
      if (method != NmsMethod::kHard && trial > 2) continue;
      NmsParams p;
      p.method = method;
      p.iou_threshold = trial % 3 == 0 ? 0.7f : 0.5f;
      const auto a = nms(cpu, s.input(), p), b = nms(gpu, s.input(), p);
      EXPECT_EQ(a.keep, b.keep) << trial;
      EXPECT_EQ(a.scores, b.scores) << trial;
    }
  }
}

TEST_F(NmsCudaVsCpuTest, EngineReusesBuffersAcrossSizes) {
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  const Device cpu(Device::Kind::kCpu);
  for (std::int64_t n : {100000, 17, 0, 1, 4099, 65, 64, 100000}) {
    const auto s = test::clustered(n, static_cast<std::uint32_t>(n) + 1, 3, 0);
    NmsParams p;
    EXPECT_EQ(engine.run(s.input(), p).keep, nms(cpu, s.input(), p).keep) << n;
  }
}

// Soft-NMS groups both below and above the shared-memory kernel's limit (~11k boxes) in one call, and the
// benchmark's 10k single group: keep lists and decayed scores bit-identical to the CPU backend.
TEST_F(NmsCudaVsCpuTest, SoftSmallAndLargeGroups) {
  const Device cpu(Device::Kind::kCpu), gpu(Device::Kind::kCuda, 0);
  auto s = test::clustered(14000, 77, 1, 7, 0.02f, 1200.f, 20);
  auto small = test::clustered(3000, 78, 4, 0, 0.02f, 800.f, 15);
  // 14000 boxes of group 100 (larger than a block's shared memory holds) + 3000 boxes of groups 0..3
  s.groups.assign(s.scores.size(), 100);
  s.boxes.insert(s.boxes.end(), small.boxes.begin(), small.boxes.end());
  s.scores.insert(s.scores.end(), small.scores.begin(), small.scores.end());
  s.groups.insert(s.groups.end(), small.groups.begin(), small.groups.end());
  for (NmsMethod method : {NmsMethod::kSoftGaussian, NmsMethod::kSoftLinear}) {
    NmsParams p;
    p.method = method;
    p.iou_threshold = 0.3f;
    const auto a = nms(cpu, s.input(true, false), p), b = nms(gpu, s.input(true, false), p);
    ASSERT_GT(a.keep.size(), 600u);
    EXPECT_EQ(a.keep, b.keep) << static_cast<int>(method);
    EXPECT_EQ(a.scores, b.scores) << static_cast<int>(method);
  }
  const auto one = test::clustered(10000, 99, 1, 0, 0.f, 1000.f, 20);
  for (NmsMethod method : {NmsMethod::kSoftGaussian, NmsMethod::kSoftLinear}) {
    NmsParams p;
    p.method = method;
    p.iou_threshold = 0.3f;
    p.pixel_offset = method == NmsMethod::kSoftLinear ? 1 : 0;
    const auto a = nms(cpu, one.input(), p), b = nms(gpu, one.input(), p);
    EXPECT_EQ(a.keep, b.keep) << static_cast<int>(method);
    EXPECT_EQ(a.scores, b.scores) << static_cast<int>(method);
  }
}

// Device-resident calls: the second identical call is captured into a CUDA graph and later ones replay it.
// Every call must give the CPU's keep list, also after the inputs change in place and after other calls.
TEST_F(NmsCudaVsCpuTest, DeviceCallsCapturedAndReplayedStayExact) {
  const Device cpu(Device::Kind::kCpu);
  Stream stream;
  DeviceBuffer<float> boxes, scores, boxes2, scores2;
  DeviceBuffer<std::int64_t> groups;
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  auto s = test::clustered(10000, 5150, 3, 9, 0.02f, 1000.f, 20);
  const auto other = test::clustered(1500, 5151, 1, 0);
  boxes.copy_from_host(s.boxes, stream);
  scores.copy_from_host(s.scores, stream);
  groups.copy_from_host(s.groups, stream);
  boxes2.copy_from_host(other.boxes, stream);
  scores2.copy_from_host(other.scores, stream);
  NmsInput in;
  in.boxes = boxes.data();
  in.scores = scores.data();
  in.count = s.size();
  for (bool grouped : {false, true}) {
    in.group_ids = grouped ? groups.data() : nullptr;
    for (std::int64_t max_dets : {0, 500}) {
      NmsParams p;
      p.iou_threshold = 0.6f;
      p.max_dets = max_dets;
      auto expect = nms(cpu, s.input(grouped, false), p).keep;
      int graphs = 0;
      for (int call = 0; call < 5; ++call) {
        if (call == 3) {  // new scores at the same address: the replay must read them
          for (auto& v : s.scores) v = 1.f - v;
          scores.copy_from_host(s.scores, stream);
          expect = nms(cpu, s.input(grouped, false), p).keep;
        }
        engine.run_device_async(in, p, stream);
        graphs += engine.last_stats().graph ? 1 : 0;
        EXPECT_EQ(engine.download(stream).keep, expect) << grouped << " " << max_dets << " call " << call;
      }
      std::printf("grouped %d max_dets %lld: %d of 5 calls ran as a graph\n", grouped ? 1 : 0,
                  static_cast<long long>(max_dets), graphs);
      // another call in between drops the graph; the first input then runs eagerly again and stays exact
      NmsInput in2;
      in2.boxes = boxes2.data();
      in2.scores = scores2.data();
      in2.count = other.size();
      engine.run_device_async(in2, p, stream);
      EXPECT_FALSE(engine.last_stats().graph);
      EXPECT_EQ(engine.download(stream).keep, nms(cpu, other.input(), p).keep);
      engine.run_device_async(in, p, stream);
      EXPECT_FALSE(engine.last_stats().graph);
      EXPECT_EQ(engine.download(stream).keep, expect);
      EXPECT_EQ(engine.run(s.input(grouped, false), p).keep, expect);  // host path drops the graph too
      engine.run_device_async(in, p, stream);
      EXPECT_EQ(engine.download(stream).keep, expect);
    }
  }
  stream.synchronize();
}

// The fused small-N CUDA path (hard, axis-aligned: one-block sort, dense triangle mask, one-block scan) around
// its tile and sort-size boundaries and past its limit, with groups, ties, duplicates, degenerate boxes and every
// parameter that it handles on the device: keep lists and scores identical to the CPU backend. The fused path
// reports rounds = -1 (the round-based path reports >= 0). Its default limit is 1024 boxes; run with
// S3D_NMS_FUSED_MAX_BOXES=16384 to take it for every size here up to 16,384 (the sizes above 1024 otherwise
// check the round-based path).
TEST_F(NmsCudaVsCpuTest, FusedSmallPathMatchesCpu) {
  const Device cpu(Device::Kind::kCpu);
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  const char* env = std::getenv("S3D_NMS_FUSED_MAX_BOXES");  // the backend's override of its fused-path limit
  const std::int64_t fused_max = env ? std::min(16384, std::max(0, std::atoi(env))) : 1024;  // default 1024
  int variant = 0;
  for (std::int64_t n : {1, 2, 63, 64, 65, 127, 1024, 1025, 4096, 4097, 10000, 16384, 16385}) {
    for (int groups : {1, 80}) {
      const auto s = test::clustered(n, static_cast<std::uint32_t>(n * 3 + groups), groups, (n + groups) % 3 ? 5 : 0,
                                     0.06f, n > 4000 ? 2500.f : 600.f, 12);
      for (int k = 0; k < 3; ++k, ++variant) {
        NmsParams p;
        p.iou_threshold = k == 0 ? 0.5f : k == 1 ? 0.7f : 0.3f;
        if (variant % 4 == 1) p.suppress_at_equal = true;
        if (variant % 5 == 2) p.pixel_offset = 1;
        if (variant % 3 == 1) p.min_score = 0.4f;
        if (variant % 7 == 3) p.max_dets = 37;
        const bool images = variant % 2 == 0;
        const auto a = nms(cpu, s.input(true, images), p);
        const auto b = engine.run(s.input(true, images), p);
        EXPECT_EQ(a.keep, b.keep) << "n " << n << " groups " << groups << " variant " << variant;
        EXPECT_EQ(a.scores, b.scores) << "n " << n << " groups " << groups << " variant " << variant;
        EXPECT_EQ(engine.last_stats().rounds == -1, n <= fused_max) << n;
      }
    }
  }
}

// Long suppression chains (each box overlaps many neighbours across many tiles, in random score order, so
// the scan waits on unpublished tiles and overflows its registers) and all-tied scores; device-resident calls
// with min_score (no host sync on the fused path) replayed as a graph stay exact.
TEST_F(NmsCudaVsCpuTest, FusedSmallPathChainsTiesAndGraphs) {
  // These sizes (up to 16384) exceed the default fused limit (1024): raise it for this engine only (the
  // engine reads S3D_NMS_FUSED_MAX_BOXES when it is constructed), so the chains run through the fused path.
  struct FusedLimitGuard {
    FusedLimitGuard() { setenv("S3D_NMS_FUSED_MAX_BOXES", "16384", 1); }
    ~FusedLimitGuard() { unsetenv("S3D_NMS_FUSED_MAX_BOXES"); }
  } fused_limit;
  const Device cpu(Device::Kind::kCpu);
  Stream stream;  // outlives the engine, which releases buffers on the streams of its calls
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  std::mt19937 rng(99);
  for (std::int64_t n : {64, 65, 3000, 10000, 16384}) {
    for (bool tied : {false, true}) {
      test::BoxSet s;
      for (std::int64_t i = 0; i < n; ++i) {
        const float x = static_cast<float>(i % 5000) * 1.5f, y = static_cast<float>(i / 5000) * 300.f;
        s.boxes.insert(s.boxes.end(), {x, y, x + 40.f, y + 40.f});
        s.scores.push_back(tied ? 0.5f : static_cast<float>(rng() % 1000) / 1000.f);
        s.groups.push_back(static_cast<std::int64_t>(i % 2));
      }
      for (float thr : {0.5f, 0.9f}) {
        NmsParams p;
        p.iou_threshold = thr;
        EXPECT_EQ(engine.run(s.input(false, false), p).keep, nms(cpu, s.input(false, false), p).keep) << n;
        EXPECT_EQ(engine.run(s.input(true, false), p).keep, nms(cpu, s.input(true, false), p).keep) << n;
      }
    }
  }
  NmsParams p;
  p.min_score = 0.3f;
  p.max_dets = 300;
  EXPECT_GE(device_calls_match_cpu(engine, test::clustered(10000, 4242, 5, 7, 0.03f, 1500.f, 16), p, 4, stream), 2);
}

// The fused grid path (hard, axis-aligned, up to 16,384 boxes: counting rank, dense triangle mask, cooperative
// rounds and compaction). The one-block fused path is turned off for these engines (the engine reads
// S3D_NMS_FUSED_MAX_BOXES when it is constructed), so the grid path takes every size from 1 to 16,384; 16,385
// takes the general pipeline. Keep lists and scores identical to the CPU backend.
struct FusedOffGuard {
  FusedOffGuard() { setenv("S3D_NMS_FUSED_MAX_BOXES", "0", 1); }
  ~FusedOffGuard() { unsetenv("S3D_NMS_FUSED_MAX_BOXES"); }
};

TEST_F(NmsCudaVsCpuTest, FusedGridPathOddSizesMatchCpu) {
  const FusedOffGuard fused_off;
  const Device cpu(Device::Kind::kCpu);
  NmsEngine engine(Device(Device::Kind::kCuda, 0));  // one engine: sizes up and down reuse its buffers
  int variant = 0;
  for (std::int64_t n :
       {0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 129, 1000, 1025, 4097, 9999, 16383, 16384, 16385, 3, 12000}) {
    for (int groups : {1, 7}) {
      const auto s = test::clustered(n, static_cast<std::uint32_t>(n * 7 + groups), groups, (n + groups) % 3 ? 6 : 0,
                                     0.05f, n > 4000 ? 2500.f : 500.f, 13);
      for (int k = 0; k < 2; ++k, ++variant) {
        NmsParams p;
        p.iou_threshold = k == 0 ? 0.5f : variant % 3 == 0 ? 0.3f : 0.8f;
        if (variant % 4 == 1) p.suppress_at_equal = true;
        if (variant % 5 == 2) p.pixel_offset = 1;
        if (variant % 3 == 1) p.min_score = 0.45f;
        if (variant % 7 == 3) p.max_dets = 29;
        if (variant % 6 == 5) p.pre_top_k = static_cast<int>(n) + 5;  // inactive: still the grid path
        const bool images = variant % 2 == 0;
        const auto a = nms(cpu, s.input(true, images), p);
        const auto b = engine.run(s.input(true, images), p);
        EXPECT_EQ(a.keep, b.keep) << "n " << n << " groups " << groups << " variant " << variant;
        EXPECT_EQ(a.scores, b.scores) << "n " << n << " groups " << groups << " variant " << variant;
        if (n > 0) EXPECT_GE(engine.last_stats().rounds, 0) << n;
      }
    }
  }
}

// Ties (all scores equal: input order decides), none suppressed (disjoint boxes), all but one suppressed
// (identical boxes), NaN and filtered scores, chains across tiles; then device-resident calls of changing sizes
// on one stream, each captured and replayed, staying exact.
TEST_F(NmsCudaVsCpuTest, FusedGridPathTiesExtremesAndGraphs) {
  const FusedOffGuard fused_off;
  const Device cpu(Device::Kind::kCpu);
  Stream stream;  // outlives the engine
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  std::mt19937 rng(7);
  for (std::int64_t n : {5, 64, 777, 5000, 16384}) {
    for (int kind = 0; kind < 4; ++kind) {
      if (kind >= 2 && n > 5000) continue;  // chains: a round per few boxes, each a grid sync
      test::BoxSet s;
      for (std::int64_t i = 0; i < n; ++i) {
        float x = 0.f, y = 0.f, score = static_cast<float>(rng() % 997) / 997.f;
        if (kind == 0) {  // disjoint: all kept
          x = static_cast<float>(i % 128) * 50.f;
          y = static_cast<float>(i / 128) * 50.f;
        } else if (kind == 1) {  // identical: one kept
          score = static_cast<float>(rng() % 5) / 5.f;
        } else if (kind == 2) {  // a chain along x, all tied
          x = static_cast<float>(i) * 4.f;
          score = 0.25f;
        } else {  // a chain with NaN and negative scores mixed in
          x = static_cast<float>(i) * 3.f;
          if (i % 11 == 0) score = std::nanf("");
          if (i % 13 == 0) score = -score;
        }
        s.boxes.insert(s.boxes.end(), {x, y, x + 40.f, y + 40.f});
        s.scores.push_back(score);
        s.groups.push_back(static_cast<std::int64_t>(i % 3));
      }
      for (float thr : {0.0f, 0.5f}) {
        NmsParams p;
        p.iou_threshold = thr;
        if (kind == 3) p.min_score = -0.5f;
        for (bool grouped : {false, true}) {
          const auto a = nms(cpu, s.input(grouped, false), p);
          const auto b = engine.run(s.input(grouped, false), p);
          EXPECT_EQ(a.keep, b.keep) << n << " kind " << kind << " thr " << thr << " grouped " << grouped;
          EXPECT_EQ(a.scores, b.scores) << n << " kind " << kind;
          if (kind == 0 && thr > 0.f) {
            EXPECT_EQ(b.keep.size(), static_cast<std::size_t>(n));
          }
          if (kind == 1 && !grouped) {
            EXPECT_EQ(b.keep.size(), 1u);
          }
        }
      }
    }
  }
  int graphs = 0;
  for (std::int64_t n : {9000, 2000, 16384, 9000}) {
    NmsParams p;
    p.min_score = 0.2f;
    p.max_dets = 500;
    graphs += device_calls_match_cpu(
        engine, test::clustered(n, static_cast<std::uint32_t>(n) + 3, 4, 9, 0.03f, 1800.f, 16), p, 3, stream);
  }
  std::printf("fused grid path: %d of 12 device calls ran as a graph\n", graphs);
  stream.synchronize();
}

// With both fused paths off (S3D_NMS_FUSED_MAX_BOXES=0, S3D_NMS_FUSED_GRID_MAX_BOXES=0, read when the engine is
// made), hard axis-aligned calls up to 16,384 boxes take the general pipeline again (priority-order mask up to
// 2048 boxes, spatial bounded mask above): it stays covered at the sizes the fused paths now take by default.
TEST_F(NmsCudaVsCpuTest, GeneralPipelineAtFusedSizesMatchesCpu) {
  struct Guard {
    Guard() {
      setenv("S3D_NMS_FUSED_MAX_BOXES", "0", 1);
      setenv("S3D_NMS_FUSED_GRID_MAX_BOXES", "0", 1);
    }
    ~Guard() {
      unsetenv("S3D_NMS_FUSED_MAX_BOXES");
      unsetenv("S3D_NMS_FUSED_GRID_MAX_BOXES");
    }
  } general_only;
  const Device cpu(Device::Kind::kCpu);
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  int variant = 0;
  for (std::int64_t n : {900, 2048, 2049, 10000, 16384}) {
    for (int groups : {1, 9}) {
      const auto s = test::clustered(n, static_cast<std::uint32_t>(n * 5 + groups), groups, n % 2 ? 0 : 7, 0.04f,
                                     n > 4000 ? 2500.f : 700.f, 15);
      NmsParams p;
      p.iou_threshold = variant % 2 ? 0.5f : 0.7f;
      if (variant % 3 == 1) p.min_score = 0.3f;
      if (variant % 4 == 2) p.max_dets = 41;
      ++variant;
      const auto a = nms(cpu, s.input(true, false), p);
      const auto b = engine.run(s.input(true, false), p);
      EXPECT_EQ(a.keep, b.keep) << "n " << n << " groups " << groups;
      EXPECT_EQ(a.scores, b.scores) << "n " << n << " groups " << groups;
      EXPECT_GE(engine.last_stats().rounds, 0) << n;
    }
  }
}

TEST_F(NmsCudaVsCpuTest, TwoMillionBoxes) {
  const auto s = test::clustered(2000000, 2024, 1, 0, 0.01f, 40000.f, 30);
  NmsParams p;
  p.iou_threshold = 0.5f;
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  const auto g = engine.run(s.input(false, false), p);
  const auto stats = engine.last_stats();
  std::printf("2M boxes: kept %zu, tile pairs %lld (dense would be %lld), rounds %lld\n", g.keep.size(),
              static_cast<long long>(stats.tile_pairs), static_cast<long long>(31250LL * 31250LL),
              static_cast<long long>(stats.rounds));
  const auto c = nms(Device(Device::Kind::kCpu), s.input(false, false), p);
  EXPECT_EQ(g.keep, c.keep);
  EXPECT_GT(g.keep.size(), 10000u);
  // per-class too: 2M boxes over 80 groups in one call
  auto s2 = test::clustered(2000000, 7, 80, 0, 0.01f, 20000.f, 30);
  EXPECT_EQ(engine.run(s2.input(), p).keep, nms(Device(Device::Kind::kCpu), s2.input(), p).keep);
}

// ---- soft-NMS: CUDA (parallel rounds over the interaction graph, or the sequential kernels when that graph is
// dense) against the CPU loop, bit for bit: same kept indices, same order, same float scores.

/// Keep lists equal and scores equal as bit patterns (-0 vs +0 and every ulp count).
void expect_soft_identical(const NmsResult& cpu, const NmsResult& gpu, const std::string& what) {
  ASSERT_EQ(cpu.keep, gpu.keep) << what;
  ASSERT_EQ(cpu.scores.size(), gpu.scores.size()) << what;
  for (std::size_t k = 0; k < cpu.scores.size(); ++k) {
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, &cpu.scores[k], 4);
    std::memcpy(&b, &gpu.scores[k], 4);
    ASSERT_EQ(a, b) << what << ": score " << k << " of box " << cpu.keep[k] << ": " << cpu.scores[k] << " vs "
                    << gpu.scores[k];
  }
}

/// Clusters of 1..max_per boxes on a lattice whose pitch exceeds any cluster: components of the interaction
/// graph are the clusters (many small independent problems).
test::BoxSet separated_clusters(int clusters, int max_per, std::uint32_t seed, int groups, int score_levels) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u01(0.f, 1.f);
  std::normal_distribution<float> jitter(0.f, 1.f);
  test::BoxSet s;
  const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(clusters))));
  for (int c = 0; c < clusters; ++c) {
    const float cx = 100.f * static_cast<float>(c % side) + 50.f, cy = 100.f * static_cast<float>(c / side) + 50.f;
    const float w = 10.f + 30.f * u01(rng), h = 10.f + 30.f * u01(rng);
    const int per = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_per));
    for (int k = 0; k < per; ++k) {
      const float bx = cx + jitter(rng) * 0.1f * w, by = cy + jitter(rng) * 0.1f * h;
      const float bw = w * (1.f + 0.1f * jitter(rng)), bh = h * (1.f + 0.1f * jitter(rng));
      s.boxes.insert(s.boxes.end(), {bx - bw / 2, by - bh / 2, bx + bw / 2, by + bh / 2});
      float score = u01(rng);
      if (score_levels > 0) score = std::floor(score * score_levels) / score_levels;
      s.scores.push_back(score);
      s.groups.push_back(groups > 1 ? static_cast<std::int64_t>(rng() % groups) : 0);
      s.images.push_back(0);
    }
  }
  return s;
}

/// Runs `s` with both soft methods (and the given variations) on the CPU and on one CUDA engine.
void expect_soft_cases(NmsEngine& engine, const test::BoxSet& s, const std::string& what, float soft_min_score,
                       bool use_groups = true) {
  const Device cpu(Device::Kind::kCpu);
  for (NmsMethod method : {NmsMethod::kSoftGaussian, NmsMethod::kSoftLinear}) {
    NmsParams p;
    p.method = method;
    p.iou_threshold = 0.3f;
    p.soft_min_score = soft_min_score;
    p.rotated = s.dim == 5;
    const auto in = s.input(use_groups, false);
    expect_soft_identical(nms(cpu, in, p), engine.run(in, p),
                          what + (method == NmsMethod::kSoftLinear ? " linear" : " gaussian"));
  }
}

TEST_F(NmsCudaVsCpuTest, SoftManySmallSeparatedClusters) {
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  expect_soft_cases(engine, separated_clusters(900, 40, 11, 1, 0), "900 clusters, one group", 1e-3f);
  expect_soft_cases(engine, separated_clusters(700, 25, 12, 7, 0), "700 clusters, 7 groups", 1e-3f);
  expect_soft_cases(engine, separated_clusters(400, 60, 13, 80, 0), "400 clusters, 80 groups", 1e-3f);
  expect_soft_cases(engine, separated_clusters(3000, 3, 14, 1, 0), "3000 clusters of 1..3", 1e-3f);
}

// The benchmark's shape: 10k clustered boxes whose bounds overlap into one component of ~9.6k boxes (the
// clusters percolate), and larger ones; the interaction graph is sparse, so the rounds path runs them.
TEST_F(NmsCudaVsCpuTest, SoftGiantSparseComponent) {
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  expect_soft_cases(engine, test::clustered(10000, 99, 1, 0, 0.f, 1000.f, 20), "10k percolating", 1e-3f);
  expect_soft_cases(engine, test::clustered(10000, 98, 1, 0, 0.f, 700.f, 20), "10k denser", 1e-3f);
  expect_soft_cases(engine, test::clustered(30001, 97, 1, 0, 0.01f, 1800.f, 20), "30k, degenerate", 1e-3f);
}

// Dense: every box overlaps every other (the graph's degree is past the rounds path's limit, so the sequential
// kernels run): below and above the shared-memory kernel's group size; and chains where each box overlaps only
// its neighbours and scores fall along it (few selections per round on the rounds path); and clusters whose
// rounds pass a cap of 3 (S3D_NMS_SOFT_MAX_ROUNDS), started again on the sequential kernels.
TEST_F(NmsCudaVsCpuTest, SoftDenseGiantComponentAndChain) {
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  for (int n : {1500, 12000}) {
    std::mt19937 rng(static_cast<std::uint32_t>(n));
    std::uniform_real_distribution<float> u01(0.f, 1.f);
    test::BoxSet s;
    for (int i = 0; i < n; ++i) {
      const float x = 100.f + 20.f * u01(rng), y = 100.f + 20.f * u01(rng);
      s.boxes.insert(s.boxes.end(), {x, y, x + 200.f + 50.f * u01(rng), y + 200.f + 50.f * u01(rng)});
      s.scores.push_back(u01(rng));
      s.groups.push_back(0);
    }
    expect_soft_cases(engine, s, "dense " + std::to_string(n), 1e-3f);
    if (n < 5000) expect_soft_cases(engine, s, "dense " + std::to_string(n) + " min 0", 0.f);
  }
  for (int length : {200, 700}) {
    test::BoxSet chain;
    for (int i = 0; i < length; ++i) {
      const float x = 4.f * static_cast<float>(i);  // overlaps the two boxes on each side
      chain.boxes.insert(chain.boxes.end(), {x, 0.f, x + 10.f, 10.f});
      chain.scores.push_back(1.f - 0.001f * static_cast<float>(i));
      chain.groups.push_back(0);
    }
    expect_soft_cases(engine, chain, "chain " + std::to_string(length), 1e-3f);
  }
  // The rounds path given up after a few rounds, then the sequential kernels from the start: the same result.
  struct RoundsCapGuard {
    RoundsCapGuard() { setenv("S3D_NMS_SOFT_MAX_ROUNDS", "3", 1); }
    ~RoundsCapGuard() { unsetenv("S3D_NMS_SOFT_MAX_ROUNDS"); }
  } rounds_cap;
  expect_soft_cases(engine, test::clustered(3000, 31, 3, 0, 0.f, 500.f, 20), "rounds given up", 1e-3f);
}

TEST_F(NmsCudaVsCpuTest, SoftTiesDuplicatesAndDrops) {
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  // scores quantised to 4 and 2 levels (long runs of equal keys), exact duplicates, degenerate boxes
  expect_soft_cases(engine, test::clustered(5000, 21, 1, 4, 0.05f, 800.f, 20), "ties 4 levels", 1e-3f);
  expect_soft_cases(engine, test::clustered(4000, 22, 5, 2, 0.05f, 600.f, 30), "ties 2 levels, 5 groups", 1e-3f);
  expect_soft_cases(engine, separated_clusters(500, 30, 23, 3, 3), "ties separated", 1e-3f);
  // soft_min_score drops: many boxes start below it, more fall below it as they decay; and no drops at all
  expect_soft_cases(engine, test::clustered(6000, 24, 3, 0, 0.02f, 900.f, 20), "drops 0.3", 0.3f);
  expect_soft_cases(engine, test::clustered(6000, 25, 1, 8, 0.02f, 900.f, 20), "drops 0.6 ties", 0.6f);
  expect_soft_cases(engine, test::clustered(3000, 26, 2, 0, 0.02f, 500.f, 20), "min 0", 0.f);
  // suppress_at_equal, another sigma, the +1 pixel convention (pruning margin), min_score and pre_top_k filters
  const Device cpu(Device::Kind::kCpu);
  const auto s = test::clustered(5000, 27, 4, 6, 0.03f, 700.f, 20);
  for (int variant = 0; variant < 4; ++variant) {
    for (NmsMethod method : {NmsMethod::kSoftGaussian, NmsMethod::kSoftLinear}) {
      NmsParams p;
      p.method = method;
      p.iou_threshold = 0.5f;
      p.suppress_at_equal = variant == 0;
      p.sigma = variant == 1 ? 0.1f : 0.5f;
      p.pixel_offset = variant == 2 ? 1 : 0;
      if (variant == 3) {
        p.min_score = 0.2f;
        p.pre_top_k = 300;
      }
      expect_soft_identical(nms(cpu, s.input(true, false), p), engine.run(s.input(true, false), p),
                            "variant " + std::to_string(variant) + (method == NmsMethod::kSoftLinear ? " l" : " g"));
    }
  }
}

TEST_F(NmsCudaVsCpuTest, SoftOddSizesClassesAndRotated) {
  NmsEngine engine(Device(Device::Kind::kCuda, 0));
  for (int n : {0, 1, 2, 3, 31, 33, 257, 1001}) {
    expect_soft_cases(engine, test::clustered(n, 40 + static_cast<std::uint32_t>(n), 1, 0, 0.05f, 300.f, 7),
                      "n " + std::to_string(n), 1e-3f);
    expect_soft_cases(engine, test::clustered(n, 41 + static_cast<std::uint32_t>(n), 80, 3, 0.05f, 300.f, 7),
                      "n " + std::to_string(n) + " 80 classes", 1e-3f);
  }
  expect_soft_cases(engine, test::rotated_clustered(3000, 42, 1, 0), "rotated", 1e-3f);
  expect_soft_cases(engine, test::rotated_clustered(2500, 43, 6, 4), "rotated classes ties", 1e-3f);
}

INSTANTIATE_TEST_SUITE_P(Devices, NmsDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::detection
