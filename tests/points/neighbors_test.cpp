// kNN, ball query and three-NN on every device against brute-force references written here (every point
// checked, sorted by (d^2, index)), on ties, duplicates, odd sizes, external queries and the real scans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "cloud_fixtures.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/points/neighbors.hpp"
#include "test_support.hpp"

namespace s3d::points {
namespace {

float d2_of(const float* a, const float* b) {
  const float dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  const float xy = dx * dx + dy * dy;
  return xy + dz * dz;
}

/// Brute force: all candidates of query q that pass `keep`, ordered by (key, index), first k.
template <typename Keep, typename Key>
Neighbors brute(const std::vector<float>& pts, const std::vector<float>& qs, int k, bool pad_first, Keep keep,
                Key key) {
  const std::size_t n = pts.size() / 3, nq = qs.size() / 3;
  Neighbors out;
  out.queries = static_cast<std::int64_t>(nq);
  out.k = k;
  for (std::size_t q = 0; q < nq; ++q) {
    std::vector<std::pair<float, std::int32_t>> c;
    for (std::size_t i = 0; i < n; ++i) {
      const float d2 = d2_of(&pts[3 * i], &qs[3 * q]);
      if (keep(q, i, d2)) c.emplace_back(key(d2), static_cast<std::int32_t>(i));
    }
    const int count = static_cast<int>(std::min<std::size_t>(c.size(), k));
    std::partial_sort(c.begin(), c.begin() + count, c.end());
    out.counts.push_back(count);
    for (int j = 0; j < k; ++j) {
      int from = j < count ? j : (pad_first && count > 0 ? 0 : -1);
      out.indices.push_back(from < 0 ? -1 : c[from].second);
      out.distances.push_back(from < 0 ? std::numeric_limits<float>::infinity()
                                       : std::sqrt(d2_of(&pts[3 * c[from].second], &qs[3 * q])));
    }
  }
  return out;
}

Neighbors brute_knn(const std::vector<float>& pts, const std::vector<float>& qs, int k, bool exclude_self) {
  return brute(
      pts, qs, k, false, [&](std::size_t q, std::size_t i, float) { return !(exclude_self && q == i); },
      [](float d2) { return d2; });
}

Neighbors brute_ball(const std::vector<float>& pts, const std::vector<float>& qs, const BallQueryParams& p) {
  const float r2 = p.radius * p.radius, m2 = p.min_radius * p.min_radius;
  return brute(
      pts, qs, p.k, p.pad == NeighborPad::kFirst,
      [&](std::size_t, std::size_t, float d2) { return d2 < r2 && (m2 == 0.f || d2 == 0.f || d2 >= m2); },
      [&](float d2) { return p.order == BallOrder::kIndex ? 0.f : d2; });
}

void expect_same(const Neighbors& got, const Neighbors& want, const char* what) {
  ASSERT_EQ(got.queries, want.queries) << what;
  EXPECT_EQ(got.counts, want.counts) << what;
  EXPECT_EQ(got.indices, want.indices) << what;
  // Distances are sqrt of the same fp32 d^2: equal, and both +inf where missing.
  EXPECT_EQ(got.distances, want.distances) << what;
}

class NeighborDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }
  PointsView<const float> view(const std::vector<float>& v) { return {v.data(), v.size() / 3}; }
};

TEST_P(NeighborDeviceTest, KnnSelfMatchesBruteForce) {
  NeighborEngine engine(GetParam());
  for (std::size_t n : {1u, 2u, 17u, 1000u, 4099u}) {
    const auto pts = test::uniform_cloud(n, 21 + static_cast<unsigned>(n));
    for (int k : {1, 3, 16, 40}) {
      KnnParams p;
      p.k = k;
      p.allow_fewer = true;
      expect_same(engine.knn(view(pts), {}, p), brute_knn(pts, pts, k, false), "self");
      p.exclude_self = true;
      expect_same(engine.knn(view(pts), {}, p), brute_knn(pts, pts, k, true), "exclude self");
    }
  }
}

TEST_P(NeighborDeviceTest, KnnOnLatticeTiesAndDuplicates) {
  NeighborEngine engine(GetParam());
  KnnParams p;
  p.k = 27;
  const auto grid = test::lattice(9, 8, 7);
  expect_same(engine.knn(view(grid), {}, p), brute_knn(grid, grid, 27, false), "lattice");
  const auto dup = test::duplicates(2000, 7, 5);
  p.k = 33;
  expect_same(engine.knn(view(dup), {}, p), brute_knn(dup, dup, 33, false), "duplicates");
}

TEST_P(NeighborDeviceTest, KnnExternalQueriesInsideAndOutsideTheCloud) {
  NeighborEngine engine(GetParam());
  const auto pts = test::uniform_cloud(3000, 4);
  auto qs = test::uniform_cloud(500, 5, 3.f);  // most queries outside the cloud's box
  for (float& v : qs) v -= 1.f;
  KnnParams p;
  p.k = 8;
  expect_same(engine.knn(view(pts), view(qs), p), brute_knn(pts, qs, 8, false), "external");
  p.k = 1024;
  expect_same(engine.knn(view(pts), view(qs), p), brute_knn(pts, qs, 1024, false), "K = 1024");
}

TEST_P(NeighborDeviceTest, KnnPadsWhenKExceedsN) {
  NeighborEngine engine(GetParam());
  const auto pts = test::uniform_cloud(5, 9);
  KnnParams p;
  p.k = 8;
  EXPECT_THROW(engine.knn(view(pts), {}, p), InvalidArgument);
  p.allow_fewer = true;
  const Neighbors got = engine.knn(view(pts), {}, p);
  expect_same(got, brute_knn(pts, pts, 8, false), "padded");
  EXPECT_EQ(got.indices[5], -1);
  EXPECT_TRUE(std::isinf(got.distances[5]));
}

TEST_P(NeighborDeviceTest, KnnOnRealKittiScan) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  const auto pts = test::read_kitti_bin(path);
  std::vector<float> qs(pts.begin(), pts.begin() + 3 * 700);  // brute force over 700 queries
  KnnParams p;
  p.k = 16;
  NeighborEngine engine(GetParam());
  expect_same(engine.knn(view(pts), view(qs), p), brute_knn(pts, qs, 16, false), "kitti");
}

TEST_P(NeighborDeviceTest, BallQueryFirstKInIndexOrder) {
  NeighborEngine engine(GetParam());
  const auto pts = test::uniform_cloud(4099, 13);
  BallQueryParams p;
  p.radius = 0.1f;
  p.k = 32;
  expect_same(engine.ball_query(view(pts), {}, p), brute_ball(pts, pts, p), "index order");
  p.order = BallOrder::kDistance;
  expect_same(engine.ball_query(view(pts), {}, p), brute_ball(pts, pts, p), "distance order");
  p.pad = NeighborPad::kFirst;
  p.min_radius = 0.03f;
  p.order = BallOrder::kIndex;
  expect_same(engine.ball_query(view(pts), {}, p), brute_ball(pts, pts, p), "min radius, pad first");
}

TEST_P(NeighborDeviceTest, BallQueryByDistanceWithTiesAndOverfullBalls) {
  // A lattice: every ball holds many points at equal distances (ties go to the smaller index), more than K.
  const auto grid = test::lattice(9, 8, 7);
  NeighborEngine engine(GetParam());
  BallQueryParams p;
  p.order = BallOrder::kDistance;
  p.radius = 2.05f;
  for (const char* isa : {static_cast<const char*>(nullptr), "baseline"}) {
    s3d::test::ScopedCpuIsa scoped(isa);
    const std::string variant = isa ? " (baseline x86-64 loops)" : "";
    for (int k : {1, 8, 64}) {
      p.k = k;
      p.min_radius = 0.f;
      expect_same(engine.ball_query(view(grid), {}, p), brute_ball(grid, grid, p),
                  ("lattice k " + std::to_string(k) + variant).c_str());
      p.min_radius = 1.2f;
      expect_same(engine.ball_query(view(grid), {}, p), brute_ball(grid, grid, p),
                  ("min radius k " + std::to_string(k) + variant).c_str());
    }
  }
}

TEST_P(NeighborDeviceTest, BallQueryByDistanceOnRealKittiScan) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  const auto pts = test::read_kitti_bin(path);
  std::vector<float> qs;  // brute force over 500 of the scan's points, spread over its rings
  const std::size_t stride = pts.size() / 3 / 500;
  for (std::size_t i = 0; i < 500; ++i)
    qs.insert(qs.end(), pts.begin() + 3 * i * stride, pts.begin() + 3 * i * stride + 3);
  NeighborEngine engine(GetParam());
  BallQueryParams p;
  p.order = BallOrder::kDistance;
  p.radius = 0.3f;
  p.k = 32;
  const Neighbors got = engine.ball_query(view(pts), view(qs), p);
  expect_same(got, brute_ball(pts, qs, p), "kitti");
  std::int64_t full = 0;
  for (std::int64_t q = 0; q < got.queries; ++q) full += got.counts[q] == p.k;
  EXPECT_GT(full, 50) << "many balls hold more than K points";
}

TEST_P(NeighborDeviceTest, BallQueryContracts) {
  NeighborEngine engine(GetParam());
  const auto grid = test::lattice(6, 5, 4);
  BallQueryParams p;
  p.radius = 1.f;  // lattice neighbours sit at exactly d = r: outside (d^2 < r^2 is strict)
  p.k = 4;
  const Neighbors got = engine.ball_query(view(grid), {}, p);
  expect_same(got, brute_ball(grid, grid, p), "d = r");
  for (std::int64_t q = 0; q < got.queries; ++q) EXPECT_EQ(got.counts[q], 1) << "only the point itself";
  const std::vector<float> far = {100.f, 100.f, 100.f};
  const Neighbors empty = engine.ball_query(view(grid), view(far), p);
  EXPECT_EQ(empty.counts[0], 0);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(empty.indices[j], -1) << "an empty ball is -1, never 0";
  p.pad = NeighborPad::kFirst;
  EXPECT_EQ(engine.ball_query(view(grid), view(far), p).indices[0], -1) << "pad first keeps -1 for an empty ball";
  p.radius = 0.f;
  EXPECT_THROW(engine.ball_query(view(grid), {}, p), InvalidArgument);
}

TEST_P(NeighborDeviceTest, ThreeNnWeights) {
  NeighborEngine engine(GetParam());
  const auto sparse = test::uniform_cloud(300, 31);
  const auto dense = test::uniform_cloud(2000, 32);
  const Interpolation w = engine.three_nn(view(sparse), view(dense));
  const Neighbors want = brute_knn(sparse, dense, 3, false);
  EXPECT_EQ(w.indices, want.indices);
  for (std::int64_t q = 0; q < w.queries; ++q) {
    float r[3], sum = 0.f;
    for (int j = 0; j < 3; ++j) sum += r[j] = 1.f / (want.distances[3 * q + j] + 1e-8f);
    for (int j = 0; j < 3; ++j) ASSERT_EQ(w.weights[3 * q + j], r[j] / sum) << "query " << q;
  }
  std::vector<double> labels(300);
  std::iota(labels.begin(), labels.end(), 0.0);
  const auto out = interpolate(w, labels.data(), 1);
  double expect0 = 0.0;
  for (int j = 0; j < 3; ++j) expect0 += static_cast<double>(w.weights[j]) * w.indices[j];
  EXPECT_DOUBLE_EQ(out[0], expect0);
}

TEST_P(NeighborDeviceTest, RejectsNonFiniteAndEmptyInput) {
  NeighborEngine engine(GetParam());
  std::vector<float> pts = test::uniform_cloud(10, 1);
  pts[7] = std::numeric_limits<float>::quiet_NaN();
  KnnParams p;
  p.k = 3;
  EXPECT_THROW(engine.knn(view(pts), {}, p), DataError);
  EXPECT_THROW(engine.knn(PointsView<const float>{}, {}, p), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Devices, NeighborDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::points
