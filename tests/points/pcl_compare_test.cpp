// s3d::points (CPU device) beside PCL's KdTreeFLANN on the real bunny and KITTI scans: kNN (self and external
// queries) and radius search give the same neighbour sets up to ties. FLANN's kd-tree (eps 0, one tree) is
// exact, but it may sum a squared distance in another order and it breaks ties its own way, so:
//  - sets are compared on squared distances that this test recomputes for both sides with the library's
//    formula; a point in one set but not the other must sit on the boundary (the K-th distance, or r^2 when the
//    ball is not full) within a tight relative tolerance: a tie, never a miss;
//  - the distances PCL reports equal the recomputed ones within that tolerance, rank by rank.
#include <gtest/gtest.h>
#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "s3d/io/point_cloud_io.hpp"
#include "s3d/points/neighbors.hpp"
#include "test_support.hpp"

namespace {

using s3d::points::BallOrder;
using s3d::points::BallQueryParams;
using s3d::points::KnnParams;
using s3d::points::NeighborEngine;
using s3d::points::Neighbors;

// FLANN and s3d both round each product and sum in fp32; a different summation order moves d^2 by a few ulp.
constexpr double kRelTol = 1e-5;

bool near(double a, double b) { return std::abs(a - b) <= kRelTol * std::max(std::abs(a), std::abs(b)) + 1e-30; }

/// The library's squared distance, ((dx*dx)+(dy*dy))+(dz*dz) in fp32 (volatile keeps FMA contraction out).
float d2(const float* p, const float* q) {
  volatile float dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
  volatile float xx = dx * dx, yy = dy * dy, zz = dz * dz;
  volatile float s = xx + yy;
  return s + zz;
}

pcl::PointCloud<pcl::PointXYZ>::Ptr to_pcl(const std::vector<float>& xyz) {
  auto cloud = pcl::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  for (std::size_t i = 0; i < xyz.size(); i += 3) cloud->push_back(pcl::PointXYZ(xyz[i], xyz[i + 1], xyz[i + 2]));
  return cloud;
}

/// Queries off the cloud: points of the cloud moved by up to `jitter` per axis, and points anywhere in the
/// bounding box (far from the surface: the grid search must widen its shells).
std::vector<float> external_queries(const std::vector<float>& xyz, std::size_t count, float jitter, unsigned seed) {
  float lo[3] = {xyz[0], xyz[1], xyz[2]}, hi[3] = {xyz[0], xyz[1], xyz[2]};
  for (std::size_t i = 0; i < xyz.size(); ++i) {
    lo[i % 3] = std::min(lo[i % 3], xyz[i]);
    hi[i % 3] = std::max(hi[i % 3], xyz[i]);
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-jitter, jitter), t(0.f, 1.f);
  std::vector<float> q;
  for (std::size_t j = 0; j < count; ++j) {
    if (j % 4 == 3) {
      for (int a = 0; a < 3; ++a) q.push_back(lo[a] + t(rng) * (hi[a] - lo[a]));
    } else {
      const std::size_t i = rng() % (xyz.size() / 3);
      for (int a = 0; a < 3; ++a) q.push_back(xyz[3 * i + a] + u(rng));
    }
  }
  return q;
}

struct Tally {
  std::int64_t rows = 0, rows_with_ties_swapped = 0, members_swapped = 0;
};

/// One query's rows: ours (first `ours_count` slots) and PCL's (sorted, truncated by the caller to at most K).
/// `boundary` is the squared distance where ties may swap members: ours' K-th when the row is full, else r^2.
void compare_row(const std::vector<float>& cloud, const float* q, const std::int32_t* ours, int ours_count,
                 const std::vector<int>& theirs, const std::vector<float>& their_d2, double boundary, Tally& tally,
                 const char* what, std::size_t query) {
  const auto where = [&] { return std::string(what) + " query " + std::to_string(query); };
  ++tally.rows;
  for (std::size_t j = 0; j < theirs.size(); ++j)
    ASSERT_TRUE(near(their_d2[j], d2(&cloud[3 * theirs[j]], q)))
        << where() << ": PCL's distance at rank " << j << " is not the point's";
  std::vector<std::int32_t> a(ours, ours + ours_count), b(theirs.begin(), theirs.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const auto in = [](const std::vector<std::int32_t>& v, std::int32_t i) {
    return std::binary_search(v.begin(), v.end(), i);
  };
  std::int64_t swapped = 0;
  for (std::int32_t i : a)
    if (!in(b, i)) {
      ++swapped;
      ASSERT_TRUE(near(d2(&cloud[3 * i], q), boundary)) << where() << ": point " << i << " only in s3d's row";
    }
  for (std::int32_t i : b)
    if (!in(a, i)) ASSERT_TRUE(near(d2(&cloud[3 * i], q), boundary)) << where() << ": point " << i << " only in PCL's";
  // Same count, and rank by rank the same distances (a swapped tie has the same distance).
  ASSERT_EQ(static_cast<std::size_t>(ours_count), theirs.size()) << where();
  for (int j = 0; j < ours_count; ++j)
    ASSERT_TRUE(near(d2(&cloud[3 * ours[j]], q), their_d2[j])) << where() << ": rank " << j;
  if (swapped) ++tally.rows_with_ties_swapped, tally.members_swapped += swapped;
}

class PclCompare : public ::testing::Test {
 protected:
  void load(const std::filesystem::path& path) {
    cloud_ = s3d::io::read_point_cloud(path.string()).xyz;
    tree_.setInputCloud(to_pcl(cloud_));
  }

  /// kNN of `queries` (empty = the cloud itself) against the tree; returns the tally.
  Tally knn(const std::vector<float>& queries, int k) {
    const bool self = queries.empty();
    const std::vector<float>& q = self ? cloud_ : queries;
    KnnParams params;
    params.k = k;
    NeighborEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
    const Neighbors ours = engine.knn({cloud_.data(), cloud_.size() / 3}, {queries.data(), queries.size() / 3}, params);
    Tally tally;
    std::vector<int> idx;
    std::vector<float> dist;
    for (std::size_t i = 0; i < q.size() / 3; ++i) {
      const pcl::PointXYZ p(q[3 * i], q[3 * i + 1], q[3 * i + 2]);
      EXPECT_EQ(tree_.nearestKSearch(p, k, idx, dist), k);
      const std::int32_t* row = &ours.indices[i * k];
      const double boundary = d2(&cloud_[3 * row[k - 1]], &q[3 * i]);
      compare_row(cloud_, &q[3 * i], row, ours.counts[i], idx, dist, boundary, tally, "kNN", i);
      if (HasFatalFailure()) return tally;
    }
    return tally;
  }

  /// Radius search: ours by distance (the nearest `k` inside r) against PCL's whole ball, sorted, cut to k.
  Tally radius(const std::vector<float>& queries, float r, int k) {
    const bool self = queries.empty();
    const std::vector<float>& q = self ? cloud_ : queries;
    BallQueryParams params;
    params.radius = r;
    params.k = k;
    params.order = BallOrder::kDistance;
    NeighborEngine engine(s3d::Device(s3d::Device::Kind::kCpu));
    const Neighbors ours =
        engine.ball_query({cloud_.data(), cloud_.size() / 3}, {queries.data(), queries.size() / 3}, params);
    Tally tally;
    std::vector<int> idx;
    std::vector<float> dist;
    std::int64_t full = 0;
    for (std::size_t i = 0; i < q.size() / 3; ++i) {
      tree_.radiusSearch(pcl::PointXYZ(q[3 * i], q[3 * i + 1], q[3 * i + 2]), r, idx, dist);
      const int count = ours.counts[i];
      const std::int32_t* row = &ours.indices[i * k];
      if (idx.size() > static_cast<std::size_t>(k)) idx.resize(k), dist.resize(k);
      full += count == k;
      const double boundary = count == k ? d2(&cloud_[3 * row[k - 1]], &q[3 * i]) : double(r) * r;
      compare_row(cloud_, &q[3 * i], row, count, idx, dist, boundary, tally, "radius", i);
      if (HasFatalFailure()) return tally;
    }
    std::cout << "radius " << r << ": " << full << " of " << q.size() / 3 << " rows full (K = " << k << ")\n";
    return tally;
  }

  static void report(const char* what, const Tally& t) {
    std::cout << what << ": " << t.rows << " rows, " << t.rows_with_ties_swapped << " with tied members swapped ("
              << t.members_swapped << " members)\n";
  }

  /// kNN (K = 16) and radius search (K = 128, by distance), each on the cloud itself and on 4096 queries off it.
  void compare_all(const std::filesystem::path& path, const std::string& name, std::size_t points, float jitter,
                   float r) {
    load(path);
    ASSERT_EQ(cloud_.size(), 3 * points);
    const std::vector<float> none, off = external_queries(cloud_, 4096, jitter, 7);
    for (const std::vector<float>* q : {&none, &off}) {
      const std::string tag = name + (q == &none ? " self" : " external");
      report((tag + " kNN K=16").c_str(), knn(*q, 16));
      ASSERT_FALSE(HasFatalFailure());
      report((tag + " radius r=" + std::to_string(r)).c_str(), radius(*q, r, 128));
      ASSERT_FALSE(HasFatalFailure());
    }
  }

  std::vector<float> cloud_;
  pcl::KdTreeFLANN<pcl::PointXYZ> tree_;  // sorted results, eps 0: exact
};

TEST_F(PclCompare, BunnyKnnAndRadius) {
  S3D_REQUIRE_DATA(path, "pointclouds/stanford_bunny/bun_zipper.ply");
  // r = 5 mm holds ~40 points on the bunny's surface: K = 128 keeps every ball whole. Queries move <= 3 mm.
  compare_all(path, "bunny", 35947, 0.003f, 0.005f);
}

TEST_F(PclCompare, KittiKnnAndRadius) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  // r = 0.3 m: the rings near the sensor are dense, so many balls are cut at K (compared up to the K-th tie).
  compare_all(path, "KITTI", 115384, 0.5f, 0.3f);
}

}  // namespace
