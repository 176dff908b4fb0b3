// FPS on every device against an independent plain reference (a first-arg-max loop written here), on ties,
// duplicates, odd sizes, batches and the real scans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <limits>
#include <vector>

#include "cloud_fixtures.hpp"
#include "fps_impl.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/parallel.hpp"
#include "s3d/points/fps.hpp"
#include "s3d/points/fps_pipeline.hpp"
#include "test_support.hpp"

namespace s3d::points {
namespace {

/// The definition, written as plainly as possible: strict '>' keeps the first (smallest) index among maxima.
std::vector<std::int32_t> reference_fps(const float* p, std::size_t n, std::size_t m, std::size_t start) {
  std::vector<float> d(n, std::numeric_limits<float>::infinity());
  std::vector<std::int32_t> out;
  std::size_t last = start;
  for (std::size_t s = 0; s < m; ++s) {
    out.push_back(static_cast<std::int32_t>(last));
    float best = -1.f;
    std::size_t arg = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float dx = p[3 * i] - p[3 * last], dy = p[3 * i + 1] - p[3 * last + 1], dz = p[3 * i + 2] - p[3 * last + 2];
      const float dx2 = dx * dx, dy2 = dy * dy, dz2 = dz * dz;
      const float sum = dx2 + dy2;
      d[i] = std::min(d[i], sum + dz2);
      if (d[i] > best) best = d[i], arg = i;
    }
    last = arg;
  }
  return out;
}

class FpsDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }
  void expect_reference(const std::vector<float>& xyz, std::size_t m, std::size_t start = 0) {
    FpsEngine engine(GetParam());
    const std::size_t n = xyz.size() / 3;
    const auto got = engine.run(PointsView<const float>{xyz.data(), n}, static_cast<std::int64_t>(m),
                                static_cast<std::int64_t>(start));
    EXPECT_EQ(got, reference_fps(xyz.data(), n, m, start)) << "n=" << n << " m=" << m << " start=" << start;
  }
};

TEST_P(FpsDeviceTest, MatchesReferenceOnOddSizes) {
  for (std::size_t n : {1u, 2u, 3u, 31u, 513u, 1000u, 4099u}) {
    const auto xyz = test::uniform_cloud(n, 7 + static_cast<unsigned>(n));
    expect_reference(xyz, std::min<std::size_t>(n, 64), n / 2);
    expect_reference(xyz, n);  // M = N
  }
}

TEST_P(FpsDeviceTest, MatchesReferenceOnLatticeTies) { expect_reference(test::lattice(17, 13, 11), 600, 5); }

TEST_P(FpsDeviceTest, KeepsPickingWhenDistinctPointsRunOut) {
  const auto xyz = test::duplicates(3001, 5, 3);
  expect_reference(xyz, 40);
  FpsEngine engine(GetParam());
  const auto got = engine.run(PointsView<const float>{xyz.data(), 3001}, 40);
  EXPECT_EQ(got[39], 0) << "with every distance 0 the smallest index is picked";
}

TEST_P(FpsDeviceTest, EveryClusterSizeMatchesReference) {
  // sm_90 runs clouds up to 32,768 points as clusters of 2, 4 or 8 blocks (by length); the last one needs 8.
  for (std::size_t n : {700u, 1025u, 9000u, 16385u, 30001u})
    expect_reference(test::uniform_cloud(n, 3 + static_cast<unsigned>(n)), 300, n / 3);
}

TEST_P(FpsDeviceTest, LargeCloudUsesTheWholeDeviceAndStaysExact) {
  expect_reference(test::uniform_cloud(300001, 11), 200, 12345);
}

TEST_P(FpsDeviceTest, BatchOfDifferentLengthsMatchesEachCloud) {
  std::vector<std::int64_t> lengths = {1000, 1, 5000, 33, 16384, 777};
  std::vector<std::int64_t> samples = {100, 1, 64, 33, 256, 0};
  std::vector<std::int64_t> starts = {3, 0, 4999, 7, 100, 0};
  std::vector<float> all;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const auto c = test::uniform_cloud(static_cast<std::size_t>(lengths[b]), 100 + static_cast<unsigned>(b));
    all.insert(all.end(), c.begin(), c.end());
  }
  FpsBatch batch{all.data(), lengths, samples, starts};
  FpsEngine engine(GetParam());
  const auto got = engine.run(batch);
  std::vector<std::int32_t> want;
  std::size_t offset = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const auto r = reference_fps(all.data() + 3 * offset, lengths[b], samples[b], starts[b]);
    want.insert(want.end(), r.begin(), r.end());
    offset += lengths[b];
  }
  EXPECT_EQ(got, want);
  // The same batch twice: the engine's reused buffers give the same answer.
  EXPECT_EQ(engine.run(batch), want);
}

TEST_P(FpsDeviceTest, CloudsRunTogetherGiveEachCloudsOwnIndices) {
  const std::vector<std::int64_t> lengths{700, 1, 2049}, samples{50, 1, 0}, starts{699, 0, 0};
  std::vector<std::vector<float>> clouds;
  std::vector<PointsView<const float>> views;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    clouds.push_back(test::uniform_cloud(static_cast<std::size_t>(lengths[b]), 300 + static_cast<unsigned>(b)));
    views.push_back({clouds.back().data(), static_cast<std::size_t>(lengths[b])});
  }
  FpsEngine engine(GetParam());
  const auto got = engine.run_each(views, samples, starts);
  ASSERT_EQ(got.size(), lengths.size());
  for (std::size_t b = 0; b < lengths.size(); ++b)
    EXPECT_EQ(got[b], reference_fps(clouds[b].data(), lengths[b], samples[b], starts[b])) << "cloud " << b;
  EXPECT_THROW(engine.run_each(views, {50, 1}, starts), InvalidArgument);
}

TEST_P(FpsDeviceTest, ManySmallCloudsMoreThanTheGpuHasSms) {
  std::vector<std::int64_t> lengths, samples, starts;
  std::vector<float> all;
  for (unsigned b = 0; b < 300; ++b) {
    const std::int64_t n = 1 + (b * 37) % 700;
    lengths.push_back(n);
    samples.push_back(std::min<std::int64_t>(n, 1 + b % 50));
    starts.push_back(static_cast<std::int64_t>(b) % n);
    const auto c = b % 3 ? test::uniform_cloud(static_cast<std::size_t>(n), b) : test::duplicates(n, 3, b);
    all.insert(all.end(), c.begin(), c.end());
  }
  FpsEngine engine(GetParam());
  const auto got = engine.run(FpsBatch{all.data(), lengths, samples, starts});
  std::vector<std::int32_t> want;
  std::size_t offset = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const auto r = reference_fps(all.data() + 3 * offset, lengths[b], samples[b], starts[b]);
    want.insert(want.end(), r.begin(), r.end());
    offset += lengths[b];
  }
  EXPECT_EQ(got, want);
}

// sm_90 runs clouds of 32,769 to 131,072 points as clusters of 8 (up to 65,536) or 16 blocks of 16 points a
// thread; longer ones fall back to fps_kernel. These compare the CUDA engine with the CPU engine (the oracle) bit
// for bit: the CPU row would compare the oracle with itself. The CPU side stays near 1.5 s on two cores.
std::vector<std::int32_t> cpu_fps(const std::vector<float>& all, const std::vector<std::int64_t>& lengths,
                                  const std::vector<std::int64_t>& samples, const std::vector<std::int64_t>& starts) {
  FpsEngine cpu{Device(Device::Kind::kCpu)};
  return cpu.run(FpsBatch{all.data(), lengths, samples, starts});
}

TEST_P(FpsDeviceTest, MidSizeCloudBatchMatchesCpuEngine) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  // Ragged: KITTI-sized clouds (random, heavy duplicates, a tied lattice) beside small ones, m up to 4,096,
  // nonzero starts; the longest (exactly 2^17) sets the cluster size for all of them.
  std::vector<std::int64_t> lengths = {131072, 700, 100000, 1, 117600, 65537, 33};
  std::vector<std::int64_t> samples = {4096, 300, 4096, 1, 1024, 512, 33};
  std::vector<std::int64_t> starts = {131071, 5, 777, 0, 12345, 65536, 7};
  std::vector<float> all;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const auto n = static_cast<std::size_t>(lengths[b]);
    const unsigned seed = 500 + static_cast<unsigned>(b);
    const auto c = b == 2   ? test::duplicates(n, 5000, seed)
                   : b == 4 ? test::lattice(50, 48, 49)
                            : test::uniform_cloud(n, seed);
    ASSERT_EQ(c.size(), 3 * n);
    all.insert(all.end(), c.begin(), c.end());
  }
  const auto want = cpu_fps(all, lengths, samples, starts);
  FpsEngine engine(GetParam());
  const FpsBatch batch{all.data(), lengths, samples, starts};
  const auto got = engine.run(batch);
  ASSERT_EQ(got.size(), want.size());
  std::size_t offset = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const auto n = static_cast<std::ptrdiff_t>(samples[b]), at = static_cast<std::ptrdiff_t>(offset);
    EXPECT_TRUE(std::equal(got.begin() + at, got.begin() + at + n, want.begin() + at))
        << "cloud " << b << " (" << lengths[b] << " points)";
    offset += static_cast<std::size_t>(samples[b]);
  }
  EXPECT_EQ(engine.run(batch), want) << "the same batch again (reused buffers)";
}

TEST_P(FpsDeviceTest, ManyMidSizeCloudsMoreThanResidentClusters) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  // 24 clouds of ~100k-131k points: more clusters of 16 blocks than an H100/H200 holds at once (~8), so they run
  // in waves; every third cloud is all duplicates (every distance ties at 0 once its positions are picked).
  std::vector<std::int64_t> lengths, samples, starts;
  std::vector<float> all;
  for (unsigned b = 0; b < 24; ++b) {
    const std::int64_t n = 100000 + static_cast<std::int64_t>(b * 1319) % 31073;
    lengths.push_back(n);
    samples.push_back(40 + b % 9);
    starts.push_back(static_cast<std::int64_t>(b) * 7919 % n);
    const auto c = b % 3 ? test::uniform_cloud(static_cast<std::size_t>(n), 900 + b, 80.f)
                         : test::duplicates(static_cast<std::size_t>(n), 30, 900 + b);
    all.insert(all.end(), c.begin(), c.end());
  }
  FpsEngine engine(GetParam());
  EXPECT_EQ(engine.run(FpsBatch{all.data(), lengths, samples, starts}), cpu_fps(all, lengths, samples, starts));
}

TEST_P(FpsDeviceTest, MidSizeClusterLimitsAndOnePastThem) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  // One cloud each: 32,768 | 32,769 (last of 8 blocks x 8 points | first of 8 x 16), 65,536 | 65,537 (8 x 16 |
  // 16 x 16), 131,072 | 131,073 (the new path's limit | the fps_kernel fallback).
  FpsEngine engine(GetParam());
  for (const std::int64_t n : {32768, 32769, 65536, 65537, 131072, 131073}) {
    const std::int64_t m = n > 100000 ? 1024 : 512, start = n - 1 - n / 5;
    const auto xyz = n % 2 ? test::duplicates(static_cast<std::size_t>(n), 4000, static_cast<unsigned>(n))
                           : test::uniform_cloud(static_cast<std::size_t>(n), static_cast<unsigned>(n));
    EXPECT_EQ(engine.run(PointsView<const float>{xyz.data(), static_cast<std::size_t>(n)}, m, start),
              cpu_fps(xyz, {n}, {m}, {start}))
        << "n=" << n;
  }
}

TEST_P(FpsDeviceTest, MidSizeClustersOfEightAndSixteenShortRuns) {
  // The mid-size kernel (8 and 16 blocks) with few steps: small enough for compute-sanitizer's racecheck.
  S3D_SKIP_CPU_VS_CPU(GetParam());
  FpsEngine engine(GetParam());
  for (const std::int64_t n : {40000, 100000}) {
    const auto xyz = test::duplicates(static_cast<std::size_t>(n), 3000, static_cast<unsigned>(n));
    EXPECT_EQ(engine.run(PointsView<const float>{xyz.data(), static_cast<std::size_t>(n)}, 24, 7),
              cpu_fps(xyz, {n}, {24}, {7}))
        << "n=" << n;
  }
}

TEST_P(FpsDeviceTest, RealKittiScan) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  expect_reference(test::read_kitti_bin(path), 512);
}

TEST_P(FpsDeviceTest, RealAerialScan) {
  S3D_REQUIRE_DATA(path, "pointclouds/aerial_vol_total/vol_total_498868.ply");
  expect_reference(test::read_binary_ply_xyz(path), 96, 1000);
}

TEST_P(FpsDeviceTest, PipelineBatchesInFlightEqualEachCloudsOwnRun) {
  // Batches of ragged clouds (random, duplicates, lattice ties) queued two at a time, a larger batch after the
  // pipeline has emptied (its slots grow), results in submission order: each cloud as its own engine run.
  FpsEngine engine(GetParam());
  FpsPipeline pipe(GetParam());
  std::deque<std::vector<float>> storage;  // stable: the views below point into it
  auto cloud = [&](std::size_t n, unsigned seed) -> const std::vector<float>& {
    storage.push_back(seed % 3 == 0   ? test::lattice(static_cast<int>(n / 100 + 1), 10, 10)
                      : seed % 3 == 1 ? test::duplicates(n, n / 5, seed)
                                      : test::uniform_cloud(n, seed));
    return storage.back();
  };
  struct Batch {
    std::vector<PointsView<const float>> clouds;
    std::vector<std::int64_t> samples, starts;
  };
  std::vector<Batch> batches(5);
  unsigned seed = 1;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const std::size_t count = k == 4 ? 9 : 5 - k;  // smaller and smaller, then the largest: the slots grow
    for (std::size_t c = 0; c < count; ++c) {
      const std::vector<float>& xyz = cloud(300 + 997 * c + 131 * (4 - k), seed++);
      const std::size_t n = xyz.size() / 3;
      batches[k].clouds.push_back({xyz.data(), n});
      batches[k].samples.push_back(static_cast<std::int64_t>(std::min<std::size_t>(n, 40 + 13 * c)));
      batches[k].starts.push_back(static_cast<std::int64_t>((c * 7919) % n));
    }
  }
  std::size_t retrieved = 0;
  auto check_oldest = [&] {
    const Batch& b = batches[retrieved];
    const auto got = pipe.retrieve();
    ASSERT_EQ(got.size(), b.clouds.size());
    for (std::size_t c = 0; c < b.clouds.size(); ++c)
      EXPECT_EQ(got[c], engine.run(b.clouds[c], b.samples[c], b.starts[c])) << "batch " << retrieved << " cloud " << c;
    ++retrieved;
  };
  for (std::size_t k = 0; k < 4; ++k) {
    if (pipe.full()) {
      EXPECT_FALSE(pipe.fits(batches[k].clouds));
      EXPECT_THROW(pipe.submit(batches[k].clouds, batches[k].samples, batches[k].starts), InvalidArgument);
      check_oldest();
    }
    ASSERT_TRUE(pipe.fits(batches[k].clouds)) << k;
    pipe.submit(batches[k].clouds, batches[k].samples, batches[k].starts);
  }
  EXPECT_FALSE(pipe.fits(batches[4].clouds));  // larger than the slots while batches are in flight
  while (pipe.in_flight() > 0) check_oldest();
  ASSERT_TRUE(pipe.fits(batches[4].clouds));
  pipe.submit(batches[4].clouds, batches[4].samples, batches[4].starts);
  check_oldest();
  EXPECT_EQ(retrieved, batches.size());
  EXPECT_THROW(pipe.retrieve(), InvalidArgument);
}

TEST_P(FpsDeviceTest, PipelineRefusesNonFiniteCloudsNamingThemAndQueuesNothing) {
  FpsPipeline pipe(GetParam());
  std::vector<float> good = test::uniform_cloud(500, 3), bad = test::uniform_cloud(400, 4);
  bad[3 * 123 + 1] = std::numeric_limits<float>::quiet_NaN();
  try {
    pipe.submit({{good.data(), 500}, {bad.data(), 400}}, {10, 10}, {0, 0});
    FAIL() << "a NaN was queued";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("FPS cloud 1: point 123"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pipe.in_flight(), 0);
  EXPECT_THROW(pipe.submit({{good.data(), 500}}, {501}, {0}), InvalidArgument);  // M > N
  pipe.submit({{good.data(), 500}}, {5}, {0});
  pipe.drain();
  EXPECT_EQ(pipe.in_flight(), 0);
}

TEST_P(FpsDeviceTest, RejectsBadShapes) {
  FpsEngine engine(GetParam());
  const auto xyz = test::uniform_cloud(10, 1);
  const PointsView<const float> view{xyz.data(), 10};
  EXPECT_THROW(engine.run(view, 11), InvalidArgument);
  EXPECT_THROW(engine.run(view, 5, 10), InvalidArgument);
  EXPECT_THROW(engine.run(PointsView<const float>{xyz.data(), 0}, 0), InvalidArgument);
  EXPECT_TRUE(engine.run(view, 0).empty());
}

// A NaN compares false in every arg-max and would take over the selection: host clouds are checked first.
TEST_P(FpsDeviceTest, RejectsNonFiniteHostPoints) {
  FpsEngine engine(GetParam());
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto xyz = test::uniform_cloud(10, 2);
    xyz[3 * 6 + 1] = bad;
    try {
      engine.run(PointsView<const float>{xyz.data(), 10}, 3);
      ADD_FAILURE() << "no DataError for a non-finite point";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("point 6"), std::string::npos) << e.what();
    }
  }
}

// The CPU backend's threads: every team size, and the hand-over of the remaining steps to one thread after any
// step, give the reference's indices (a lattice above the threading threshold: ties across the threads' blocks).
TEST(FpsCpuThreads, AnyTeamAndAnyHandOverGiveTheReference) {
  const std::vector<float> xyz = test::lattice(71, 67, 61);  // 290,177 points
  const std::size_t n = xyz.size() / 3, m = 150, start = 7;
  const auto want = reference_fps(xyz.data(), n, m, start);
  const int threads_before = cpu_threads();
  for (int threads : {1, 2, 3, 5}) {
    set_cpu_threads(threads);
    for (std::int64_t alone_after : {-1, 1, 2, 33, 148, 149}) {
      std::vector<std::int32_t> got(m, -7);
      detail::fps_cpu_cloud(xyz.data(), static_cast<std::int64_t>(n), static_cast<std::int64_t>(m),
                            static_cast<std::int64_t>(start), got.data(), alone_after);
      EXPECT_EQ(got, want) << "threads " << threads << ", alone after step " << alone_after;
    }
  }
  set_cpu_threads(threads_before);
}

INSTANTIATE_TEST_SUITE_P(Devices, FpsDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::points
