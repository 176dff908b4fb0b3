// Voxelisation on every device against a plain reference written here (a std::map keyed by (batch, z, y, x),
// each cell computed with the formulas the header states), on odd sizes, boundaries, duplicates, the keep
// rules, batches and the real scans; CUDA results byte-equal to the CPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "cloud_fixtures.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/voxels.hpp"
#include "test_support.hpp"

namespace s3d::points {
namespace {

using Cell = std::array<long long, 4>;  // batch, z, y, x

/// The reference: cells by the stated formulas, voxels in a std::map, the keep rules applied in the stated order.
Voxels reference(const std::vector<float>& xyz, const std::vector<std::int32_t>& batch, const VoxelizeParams& p) {
  const std::size_t n = xyz.size() / 3;
  Voxels out;
  std::vector<std::array<double, 3>> cells(n);
  std::vector<bool> inside(n, true);
  long long dims[3] = {0, 0, 0};
  for (int a = 0; a < 3; ++a) {
    const float v = p.voxel_size[a];
    if (p.origin == VoxelOrigin::kWorld) {
      const float inv = 1.0f / v;
      double lo = 0, hi = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float prod = xyz[3 * i + a] * inv;
        cells[i][a] = std::floor(prod);
        lo = i == 0 ? cells[i][a] : std::min(lo, cells[i][a]);
        hi = i == 0 ? cells[i][a] : std::max(hi, cells[i][a]);
      }
      for (std::size_t i = 0; i < n; ++i) cells[i][a] -= lo;
      dims[a] = n ? static_cast<long long>(hi - lo) + 1 : 0;
      out.origin[a] = lo * static_cast<double>(v);
    } else if (p.origin == VoxelOrigin::kMinBound) {
      double lo = 0;
      for (std::size_t i = 0; i < n; ++i) lo = i == 0 ? xyz[3 * i + a] : std::min<double>(lo, xyz[3 * i + a]);
      const double origin = lo - static_cast<double>(v) / 2;
      long long hi = 0;
      for (std::size_t i = 0; i < n; ++i) {
        cells[i][a] = std::floor((static_cast<double>(xyz[3 * i + a]) - origin) / static_cast<double>(v));
        hi = std::max(hi, static_cast<long long>(cells[i][a]));
      }
      dims[a] = n ? hi + 1 : 0;
      out.origin[a] = n ? origin : 0.0;
    } else {
      const float lo = p.range[a], hi = p.range[3 + a];
      dims[a] = std::llround((static_cast<double>(hi) - lo) / v);
      for (std::size_t i = 0; i < n; ++i) {
        const float q = xyz[3 * i + a];
        const float d = q - lo;
        cells[i][a] = std::floor(d / v);
        if (!(q >= lo && q < hi) || cells[i][a] < 0 || cells[i][a] >= static_cast<double>(dims[a])) inside[i] = false;
      }
      out.origin[a] = lo;
    }
  }
  out.shape = {dims[2], dims[1], dims[0]};
  std::map<Cell, std::vector<std::int32_t>> voxels;
  for (std::size_t i = 0; i < n; ++i) {
    if (!inside[i]) {
      ++out.dropped_out_of_range;
      continue;
    }
    voxels[{batch.empty() ? 0 : batch[i], static_cast<long long>(cells[i][2]), static_cast<long long>(cells[i][1]),
            static_cast<long long>(cells[i][0])}]
        .push_back(static_cast<std::int32_t>(i));
  }
  // min points on the full voxel, then the first max_voxels survivors by first index.
  std::vector<std::int32_t> firsts;
  for (auto& [cell, members] : voxels)
    if (static_cast<int>(members.size()) >= p.min_points_per_voxel) firsts.push_back(members[0]);
  std::sort(firsts.begin(), firsts.end());
  const std::int32_t last_first = p.max_voxels > 0 && static_cast<std::int64_t>(firsts.size()) > p.max_voxels
                                      ? firsts[p.max_voxels - 1]
                                      : std::numeric_limits<int>::max();
  out.point_voxel.assign(n, -1);
  for (auto& [cell, members] : voxels) {
    const std::size_t keep =
        p.max_points_per_voxel > 0 ? std::min<std::size_t>(members.size(), p.max_points_per_voxel) : members.size();
    out.dropped_over_max_points += static_cast<std::int64_t>(members.size() - keep);
    if (static_cast<int>(members.size()) < p.min_points_per_voxel || members[0] > last_first) {
      out.dropped_over_max_voxels += static_cast<std::int64_t>(keep);
      continue;
    }
    members.resize(keep);
    const auto id = static_cast<std::int32_t>(out.count++);
    for (int a = 0; a < 4; ++a) out.coords.push_back(static_cast<std::int32_t>(cell[a]));
    out.points_per_voxel.push_back(static_cast<std::int32_t>(keep));
    std::int32_t rep = members[0];
    if (p.aggregate == VoxelAggregate::kNearestCenter) {
      double best = std::numeric_limits<double>::infinity();
      for (std::int32_t i : members) {
        double d2 = 0;
        for (int a = 0; a < 3; ++a) {
          const double centre = out.origin[a] + (static_cast<double>(cell[3 - a]) + 0.5) * p.voxel_size[a];
          const double d = static_cast<double>(xyz[3 * i + a]) - centre;
          d2 += d * d;
        }
        if (d2 < best) best = d2, rep = i;
      }
    }
    out.representative.push_back(rep);
    for (int a = 0; a < 3; ++a) {
      if (p.aggregate == VoxelAggregate::kMean) {
        double sum = 0;
        for (std::int32_t i : members) sum += xyz[3 * i + a];
        out.xyz.push_back(static_cast<float>(sum / static_cast<double>(keep)));
      } else {
        out.xyz.push_back(xyz[3 * rep + a]);
      }
    }
    for (std::int32_t i : members) out.point_voxel[i] = id;
  }
  return out;
}

void expect_same(const Voxels& got, const Voxels& want, const char* what) {
  ASSERT_EQ(got.count, want.count) << what;
  EXPECT_EQ(got.shape, want.shape) << what;
  EXPECT_EQ(got.origin, want.origin) << what;
  EXPECT_EQ(got.coords, want.coords) << what;
  EXPECT_EQ(got.point_voxel, want.point_voxel) << what;
  EXPECT_EQ(got.points_per_voxel, want.points_per_voxel) << what;
  EXPECT_EQ(got.representative, want.representative) << what;
  ASSERT_EQ(got.xyz.size(), want.xyz.size()) << what;
  // Bit patterns, so that -0 and +0 differ and the comparison is byte for byte.
  if (!got.xyz.empty())
    EXPECT_EQ(0, std::memcmp(got.xyz.data(), want.xyz.data(), got.xyz.size() * sizeof(float))) << what;
  EXPECT_EQ(got.dropped_out_of_range, want.dropped_out_of_range) << what;
  EXPECT_EQ(got.dropped_over_max_points, want.dropped_over_max_points) << what;
  EXPECT_EQ(got.dropped_over_max_voxels, want.dropped_over_max_voxels) << what;
}

/// Every input point is kept or counted in exactly one drop counter.
void expect_accounted(const Voxels& v, std::size_t n) {
  std::int64_t kept = 0;
  for (std::int32_t c : v.points_per_voxel) kept += c;
  EXPECT_EQ(kept + v.dropped_out_of_range + v.dropped_over_max_points + v.dropped_over_max_voxels,
            static_cast<std::int64_t>(n));
  EXPECT_EQ(static_cast<std::int64_t>(
                std::count_if(v.point_voxel.begin(), v.point_voxel.end(), [](std::int32_t i) { return i >= 0; })),
            kept);
}

class VoxelDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }

  /// Runs the engine under test, checks it against the reference and, on CUDA, against the CPU backend.
  Voxels check(const std::vector<float>& xyz, const VoxelizeParams& p, const char* what,
               const std::vector<std::int32_t>& batch = {}) {
    VoxelEngine engine(GetParam());
    const PointsView<const float> view{xyz.data(), xyz.size() / 3};
    const std::int32_t* ids = batch.empty() ? nullptr : batch.data();
    Voxels got = engine.voxelize(view, ids, p);
    expect_same(got, reference(xyz, batch, p), what);
    expect_accounted(got, xyz.size() / 3);
    if (GetParam().is_cuda()) {
      VoxelEngine cpu(Device::parse("cpu"));
      expect_same(got, cpu.voxelize(view, ids, p), what);
    }
    return got;
  }
};

VoxelizeParams params(VoxelOrigin origin, VoxelAggregate aggregate, float v = 0.25f) {
  VoxelizeParams p;
  p.voxel_size = {v, v, v};
  p.origin = origin;
  p.aggregate = aggregate;
  p.range = {-2.f, -2.5f, -1.f, 1.5f, 2.f, 2.f};
  return p;
}

/// 1,237 points in [-3, 2)^3: negative coordinates, an odd size, boundaries crossed everywhere.
std::vector<float> signed_cloud() {
  std::vector<float> xyz = test::uniform_cloud(1237, 7, 5.f);
  for (float& v : xyz) v -= 3.f;
  return xyz;
}

constexpr VoxelOrigin kOrigins[] = {VoxelOrigin::kWorld, VoxelOrigin::kMinBound, VoxelOrigin::kRange};
constexpr VoxelAggregate kAggregates[] = {VoxelAggregate::kMean, VoxelAggregate::kFirst,
                                          VoxelAggregate::kNearestCenter};

TEST_P(VoxelDeviceTest, EveryOriginAndAggregateMatchesReference) {
  const auto xyz = signed_cloud();
  for (VoxelOrigin o : kOrigins)
    for (VoxelAggregate g : kAggregates) {
      VoxelizeParams p = params(o, g);
      p.voxel_size = {0.25f, 0.3f, 0.17f};  // anisotropic
      check(xyz, p, "signed cloud");
    }
}

TEST_P(VoxelDeviceTest, EmptyCloudAndOnePoint) {
  for (VoxelOrigin o : kOrigins) {
    const Voxels empty = check({}, params(o, VoxelAggregate::kMean), "empty");
    EXPECT_EQ(empty.count, 0);
    const Voxels one = check({0.3f, -0.7f, 1.1f}, params(o, VoxelAggregate::kNearestCenter), "one point");
    EXPECT_EQ(one.count, 1);
    EXPECT_EQ(one.point_voxel, std::vector<std::int32_t>{0});
  }
}

TEST_P(VoxelDeviceTest, AllPointsInOneVoxelAndDuplicates) {
  std::vector<float> xyz = test::uniform_cloud(333, 3, 0.2f);
  for (VoxelOrigin o : {VoxelOrigin::kWorld, VoxelOrigin::kRange}) {
    VoxelizeParams p = params(o, VoxelAggregate::kMean, 1.f);
    p.range = {0.f, 0.f, 0.f, 1.f, 1.f, 1.f};
    const Voxels v = check(xyz, p, "one voxel");
    EXPECT_EQ(v.count, 1);
    EXPECT_EQ(v.points_per_voxel, std::vector<std::int32_t>{333});
  }
  const auto dup = test::duplicates(2000, 37, 11);
  for (VoxelAggregate g : kAggregates) check(dup, params(VoxelOrigin::kMinBound, g, 0.01f), "duplicates");
}

TEST_P(VoxelDeviceTest, PointsExactlyOnBoundaries) {
  // A lattice at multiples of the voxel size (exact in fp32): every point sits on a cell corner.
  std::vector<float> xyz = test::lattice(9, 7, 5);
  for (float& v : xyz) v = v * 0.25f - 1.f;
  for (VoxelOrigin o : kOrigins) {
    VoxelizeParams p = params(o, VoxelAggregate::kNearestCenter);
    p.range = {-1.f, -1.f, -1.f, 0.75f, 0.25f, 0.f};  // the upper faces are outside [min, max)
    check(xyz, p, "lattice");
  }
}

TEST_P(VoxelDeviceTest, KeepRules) {
  const auto xyz = test::duplicates(3001, 120, 5);
  for (VoxelOrigin o : kOrigins)
    for (int max_points : {0, 1, 4})
      for (std::int64_t max_voxels : {0, 1, 17, 1000})
        for (int min_points : {1, 3, 30}) {
          VoxelizeParams p = params(o, VoxelAggregate::kMean, 0.09f);
          p.range = {0.1f, 0.f, 0.2f, 0.8f, 0.9f, 1.f};
          p.max_points_per_voxel = max_points;
          p.max_voxels = max_voxels;
          p.min_points_per_voxel = min_points;
          const Voxels v = check(xyz, p, "keep rules");
          if (max_voxels) EXPECT_LE(v.count, max_voxels);
        }
}

TEST_P(VoxelDeviceTest, Batches) {
  const auto xyz = signed_cloud();
  std::vector<std::int32_t> batch(xyz.size() / 3);
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<std::int32_t>((i * 7) % 5);  // 0..4
  for (VoxelOrigin o : kOrigins) {
    VoxelizeParams p = params(o, VoxelAggregate::kFirst);
    p.max_voxels = 300;
    p.max_points_per_voxel = 3;
    const Voxels v = check(xyz, p, "batches", batch);
    // Sorted linear order = lexicographic (b, z, y, x).
    for (std::int64_t j = 1; j < v.count; ++j)
      EXPECT_TRUE(std::lexicographical_compare(&v.coords[4 * (j - 1)], &v.coords[4 * j], &v.coords[4 * j],
                                               &v.coords[4 * j + 4]));
  }
}

TEST_P(VoxelDeviceTest, AggregateAttributeFollowsTheVoxels) {
  const auto xyz = signed_cloud();
  VoxelEngine engine(GetParam());
  for (VoxelAggregate g : kAggregates) {
    VoxelizeParams p = params(VoxelOrigin::kWorld, g);
    p.max_points_per_voxel = 5;
    const Voxels v = engine.voxelize({xyz.data(), xyz.size() / 3}, nullptr, p);
    std::vector<double> values(xyz.begin(), xyz.end());  // the coordinates as a 3-channel attribute
    const auto agg = aggregate_attribute(v, g, values.data(), 3);
    ASSERT_EQ(agg.size(), v.xyz.size());
    for (std::size_t j = 0; j < agg.size(); ++j) EXPECT_EQ(static_cast<float>(agg[j]), v.xyz[j]) << j;
  }
}

TEST_P(VoxelDeviceTest, RealKittiScan) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  const auto xyz = test::read_kitti_bin(path);
  VoxelizeParams p = params(VoxelOrigin::kWorld, VoxelAggregate::kMean, 0.1f);
  check(xyz, p, "kitti world");
  p.origin = VoxelOrigin::kMinBound;
  p.aggregate = VoxelAggregate::kNearestCenter;
  check(xyz, p, "kitti min bound");
  // SECOND / PointPillars-like settings: KITTI's range, 0.05 x 0.05 x 0.1, at most 5 points and 16,000 voxels.
  p.origin = VoxelOrigin::kRange;
  p.aggregate = VoxelAggregate::kMean;
  p.voxel_size = {0.05f, 0.05f, 0.1f};
  p.range = {0.f, -40.f, -3.f, 70.4f, 40.f, 1.f};
  p.max_points_per_voxel = 5;
  p.max_voxels = 16000;
  const Voxels v = check(xyz, p, "kitti range");
  EXPECT_EQ(v.shape, (std::array<std::int64_t, 3>{40, 1600, 1408}));
  EXPECT_LE(v.count, 16000);
  EXPECT_GT(v.dropped_over_max_points, 0);
  EXPECT_GT(v.dropped_out_of_range, 0);
}

TEST_P(VoxelDeviceTest, DeviceResidentMatchesHost) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  auto xyz = test::read_kitti_bin(path);
  xyz[3 * 11] = std::numeric_limits<float>::quiet_NaN();  // a non-finite point falls outside the range
  VoxelizeParams p = params(VoxelOrigin::kRange, VoxelAggregate::kMean);
  p.voxel_size = {0.05f, 0.05f, 0.1f};
  p.range = {0.f, -40.f, -3.f, 70.4f, 40.f, 1.f};
  p.max_points_per_voxel = 5;
  p.max_voxels = 16000;
  VoxelEngine engine(GetParam());
  const PointsView<const float> view{xyz.data(), xyz.size() / 3};
  if (!GetParam().is_cuda()) {
    EXPECT_THROW(engine.voxelize_device(view, p), InvalidArgument);
    return;
  }
  std::vector<float> finite = xyz;
  finite.erase(finite.begin() + 33, finite.begin() + 36);  // the host API rejects NaN: compare without it
  DeviceBuffer<float> points(xyz.size());
  points.copy_from_host_async(xyz.data(), xyz.size(), nullptr);
  for (VoxelAggregate g : kAggregates) {
    p.aggregate = g;
    const DeviceVoxels got = engine.voxelize_device({points.data(), xyz.size() / 3}, p);
    const Voxels want = VoxelEngine(Device::parse("cpu")).voxelize({finite.data(), finite.size() / 3}, nullptr, p);
    ASSERT_EQ(got.count, want.count);
    EXPECT_EQ(got.shape, want.shape);
    EXPECT_EQ(got.dropped_out_of_range, want.dropped_out_of_range + 1);
    EXPECT_EQ(got.dropped_over_max_points, want.dropped_over_max_points);
    EXPECT_EQ(got.dropped_over_max_voxels, want.dropped_over_max_voxels);
    const std::size_t m = static_cast<std::size_t>(got.count);
    std::vector<std::int32_t> coords(4 * m), per_voxel(m), representative(m);
    std::vector<float> centres(3 * m);
    s3d::detail::copy_bytes_async(coords.data(), got.coords, coords.size() * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(per_voxel.data(), got.points_per_voxel, m * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(representative.data(), got.representative, m * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(centres.data(), got.xyz, centres.size() * 4, 2, nullptr);
    s3d::synchronize(nullptr);
    EXPECT_EQ(coords, want.coords);
    EXPECT_EQ(per_voxel, want.points_per_voxel);
    EXPECT_EQ(centres, want.xyz);
    for (std::size_t v = 0; v < m; ++v)  // rows after the dropped NaN point moved down by one on the host side
      ASSERT_EQ(representative[v], want.representative[v] + (want.representative[v] >= 11 ? 1 : 0)) << v;
  }
  p.origin = VoxelOrigin::kWorld;  // the world grid needs finite points, as the host API does
  EXPECT_THROW(engine.voxelize_device({points.data(), xyz.size() / 3}, p), DataError);
}

/// DeviceVoxels brought to the host, in Voxels' layout.
Voxels download(const DeviceVoxels& d, std::size_t n) {
  Voxels v;
  v.count = d.count;
  v.shape = d.shape;
  v.origin = d.origin;
  const std::size_t m = static_cast<std::size_t>(d.count);
  v.coords.resize(4 * m);
  v.points_per_voxel.resize(m);
  v.representative.resize(m);
  v.xyz.resize(3 * m);
  v.point_voxel.resize(n);
  if (m) {
    s3d::detail::copy_bytes_async(v.coords.data(), d.coords, v.coords.size() * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(v.points_per_voxel.data(), d.points_per_voxel, m * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(v.representative.data(), d.representative, m * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(v.xyz.data(), d.xyz, v.xyz.size() * 4, 2, nullptr);
  }
  if (n) s3d::detail::copy_bytes_async(v.point_voxel.data(), d.point_voxel, n * 4, 2, nullptr);
  s3d::synchronize(nullptr);
  v.dropped_out_of_range = d.dropped_out_of_range;
  v.dropped_over_max_points = d.dropped_over_max_points;
  v.dropped_over_max_voxels = d.dropped_over_max_voxels;
  return v;
}

TEST_P(VoxelDeviceTest, DeviceResidentEveryGridAndBatches) {
  // voxelize_device under the world and min-bound grids (bounds found on the GPU) and with batch ids, on both
  // CUDA paths (unlimited points: the sort; 3 a voxel: the hash), against the CPU's voxelize.
  const auto xyz = signed_cloud();
  const std::size_t n = xyz.size() / 3;
  std::vector<std::int32_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::int32_t>((i * 7) % 5);
  VoxelEngine engine(GetParam());
  if (!GetParam().is_cuda()) {
    EXPECT_THROW(engine.voxelize_device({xyz.data(), n}, nullptr, params(VoxelOrigin::kWorld, VoxelAggregate::kMean)),
                 InvalidArgument);
    return;
  }
  VoxelEngine cpu(Device::parse("cpu"));
  DeviceBuffer<float> points(xyz.size());
  points.copy_from_host_async(xyz.data(), xyz.size(), nullptr);
  DeviceBuffer<std::int32_t> batch(n);
  batch.copy_from_host_async(ids.data(), n, nullptr);
  s3d::synchronize(nullptr);
  for (VoxelOrigin o : kOrigins)
    for (bool batched : {false, true})
      for (int max_points : {0, 3})
        for (VoxelAggregate g : {VoxelAggregate::kMean, VoxelAggregate::kNearestCenter}) {
          VoxelizeParams p = params(o, g);
          p.max_points_per_voxel = max_points;
          p.max_voxels = 200;
          for (std::size_t count : {n, n - 1, std::size_t{1}}) {
            const Voxels want = cpu.voxelize({xyz.data(), count}, batched ? ids.data() : nullptr, p);
            const DeviceVoxels got =
                engine.voxelize_device({points.data(), count}, batched ? batch.data() : nullptr, p);
            expect_same(download(got, count), want, batched ? "device, batches" : "device");
          }
        }
  // No points: an empty grid, as voxelize gives.
  const DeviceVoxels empty =
      engine.voxelize_device({points.data(), 0}, params(VoxelOrigin::kWorld, VoxelAggregate::kMean));
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.shape, (std::array<std::int64_t, 3>{0, 0, 0}));
  // A non-finite point: a DataError under the world and min-bound grids; dropped under a range grid, batch ids or
  // not. A negative batch id: InvalidArgument, naming the point.
  std::vector<float> bad = xyz;
  bad[3 * 700 + 1] = std::numeric_limits<float>::infinity();
  points.copy_from_host_async(bad.data(), bad.size(), nullptr);
  s3d::synchronize(nullptr);
  for (VoxelOrigin o : {VoxelOrigin::kWorld, VoxelOrigin::kMinBound}) {
    try {
      engine.voxelize_device({points.data(), n}, batch.data(), params(o, VoxelAggregate::kMean));
      ADD_FAILURE() << "no DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("point 700 "), std::string::npos) << e.what();
    }
  }
  const DeviceVoxels ranged =
      engine.voxelize_device({points.data(), n}, batch.data(), params(VoxelOrigin::kRange, VoxelAggregate::kMean));
  std::vector<float> finite = xyz;
  std::vector<std::int32_t> finite_ids = ids;
  finite.erase(finite.begin() + 3 * 700, finite.begin() + 3 * 701);
  finite_ids.erase(finite_ids.begin() + 700);
  const Voxels want_ranged =
      cpu.voxelize({finite.data(), n - 1}, finite_ids.data(), params(VoxelOrigin::kRange, VoxelAggregate::kMean));
  const Voxels got_ranged = download(ranged, n);
  ASSERT_EQ(got_ranged.count, want_ranged.count);
  EXPECT_EQ(got_ranged.dropped_out_of_range, want_ranged.dropped_out_of_range + 1);
  EXPECT_EQ(got_ranged.coords, want_ranged.coords);
  EXPECT_EQ(got_ranged.points_per_voxel, want_ranged.points_per_voxel);
  EXPECT_EQ(got_ranged.xyz, want_ranged.xyz);
  EXPECT_EQ(got_ranged.point_voxel[700], -1);
  ids[911] = -2;
  batch.copy_from_host_async(ids.data(), n, nullptr);
  s3d::synchronize(nullptr);
  try {
    engine.voxelize_device({points.data(), n}, batch.data(), params(VoxelOrigin::kRange, VoxelAggregate::kMean));
    ADD_FAILURE() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("point 911 "), std::string::npos) << e.what();
  }
}

TEST_P(VoxelDeviceTest, DeviceResidentWorldAndMinBoundOnARealScan) {
  // The bounds pass over a whole scan (more points than its grid has threads: each thread takes several),
  // under the world and min-bound grids, both CUDA paths, against the CPU's voxelize.
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  const auto xyz = test::read_kitti_bin(path);
  const std::size_t n = xyz.size() / 3;
  if (!GetParam().is_cuda()) GTEST_SKIP() << "device-resident voxels need CUDA";
  VoxelEngine engine(GetParam());
  VoxelEngine cpu(Device::parse("cpu"));
  DeviceBuffer<float> points(xyz.size());
  points.copy_from_host_async(xyz.data(), xyz.size(), nullptr);
  s3d::synchronize(nullptr);
  for (VoxelOrigin o : {VoxelOrigin::kWorld, VoxelOrigin::kMinBound})
    for (int max_points : {0, 5}) {
      VoxelizeParams p = params(o, VoxelAggregate::kMean, 0.05f);
      p.max_points_per_voxel = max_points;
      const Voxels want = cpu.voxelize({xyz.data(), n}, nullptr, p);
      expect_same(download(engine.voxelize_device({points.data(), n}, p), n), want, "kitti, device");
    }
}

// The CUDA fast path (1 <= max_points_per_voxel <= 32, voxels_hash.cuh) and its fallback (0 or > 32) against
// the reference and the CPU backend: odd sizes, crowded voxels, every keep rule, points outside the range,
// batches, 64-bit keys.
TEST_P(VoxelDeviceTest, BoundedMaxPointsEveryRule) {
  const auto dup = test::duplicates(1999, 150, 13);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1999}}) {
    const std::vector<float> xyz(dup.begin(), dup.begin() + 3 * n);
    for (VoxelOrigin o : kOrigins)
      for (int max_points : {1, 2, 5, 32, 33})
        for (std::int64_t max_voxels : {0, 1, 9, 100000})
          for (int min_points : {1, 2, 6})
            for (VoxelAggregate g : kAggregates) {
              if (n < 1999 && (max_voxels == 9 || min_points == 6)) continue;
              VoxelizeParams p = params(o, g, 0.07f);
              p.range = {0.05f, 0.1f, 0.f, 0.9f, 0.75f, 0.8f};  // part of the cloud lies outside
              p.max_points_per_voxel = max_points;
              p.max_voxels = max_voxels;
              p.min_points_per_voxel = min_points;
              check(xyz, p, "bounded max points");
            }
  }
}

TEST_P(VoxelDeviceTest, BoundedMaxPointsOneCrowdedVoxel) {
  const std::vector<float> xyz = test::uniform_cloud(4099, 17, 0.5f);  // every point in cell (0, 0, 0)
  for (VoxelOrigin o : {VoxelOrigin::kWorld, VoxelOrigin::kRange})
    for (int max_points : {1, 5, 32})
      for (VoxelAggregate g : kAggregates) {
        VoxelizeParams p = params(o, g, 1.f);
        p.range = {0.f, 0.f, 0.f, 1.f, 1.f, 1.f};
        p.max_points_per_voxel = max_points;
        const Voxels v = check(xyz, p, "one crowded voxel");
        ASSERT_EQ(v.count, 1);
        EXPECT_EQ(v.points_per_voxel[0], max_points);
        EXPECT_EQ(v.dropped_over_max_points, 4099 - max_points);
      }
}

TEST_P(VoxelDeviceTest, BoundedMaxPointsBatchesAndWideKeys) {
  const auto xyz = signed_cloud();
  std::vector<std::int32_t> batch(xyz.size() / 3);
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<std::int32_t>((i * 5) % 7);
  for (VoxelOrigin o : kOrigins) {
    VoxelizeParams p = params(o, VoxelAggregate::kNearestCenter, 0.4f);
    p.max_points_per_voxel = 2;
    p.max_voxels = 250;
    p.min_points_per_voxel = 2;
    check(xyz, p, "bounded batches", batch);
  }
  // 1 mm voxels over a 300 m span: ~3e5 cells per axis, keys beyond 32 bits.
  std::vector<float> wide = signed_cloud();
  for (float& v : wide) v *= 60.f;
  for (VoxelAggregate g : kAggregates) {
    VoxelizeParams p = params(VoxelOrigin::kWorld, g, 0.001f);
    p.max_points_per_voxel = 3;
    p.max_voxels = 1000;
    check(wide, p, "64-bit keys");
  }
}

TEST_P(VoxelDeviceTest, BoundedMaxPointsDenseFloorOfAFineGrid) {
  // A floor filling every cell of its layer of a 1 cm grid (30-bit keys): the CUDA fast path orders the kept
  // voxels within buckets of consecutive keys, which the floor fills; unbounded, the sort path takes it.
  std::vector<float> xyz;
  for (int y = 0; y < 300; ++y)
    for (int x = 0; x < 400; ++x)
      for (float z : {0.503f, 0.507f}) {  // two points a cell
        xyz.push_back(0.005f + 0.01f * static_cast<float>(x));
        xyz.push_back(0.005f + 0.01f * static_cast<float>(y));
        xyz.push_back(z);
      }
  for (std::int64_t max_voxels : {std::int64_t{0}, std::int64_t{3001}}) {
    VoxelizeParams p = params(VoxelOrigin::kRange, VoxelAggregate::kMean, 0.01f);
    p.range = {0.f, 0.f, 0.f, 20.f, 20.f, 2.f};
    p.max_points_per_voxel = 1;
    p.max_voxels = max_voxels;
    const Voxels v = check(xyz, p, "dense floor");
    EXPECT_EQ(v.count, max_voxels > 0 ? max_voxels : 120000);
    EXPECT_EQ(v.dropped_over_max_points, 120000);  // every cell keeps the first of its two points
  }
}

TEST_P(VoxelDeviceTest, OneEngineAcrossSizesAndRepeats) {
  // Buffers grow and shrink, the table is reset between calls, and a repeat gives the same bits.
  VoxelEngine engine(GetParam());
  VoxelEngine cpu(Device::parse("cpu"));
  const auto big = test::duplicates(5003, 400, 3);
  for (std::size_t n : {std::size_t{5003}, std::size_t{1}, std::size_t{64}, std::size_t{5003}, std::size_t{5003}}) {
    const PointsView<const float> view{big.data(), n};
    VoxelizeParams p = params(VoxelOrigin::kRange, VoxelAggregate::kMean, 0.05f);
    p.range = {0.f, 0.f, 0.f, 1.f, 1.f, 0.5f};
    p.max_points_per_voxel = 4;
    p.max_voxels = 700;
    expect_same(engine.voxelize(view, nullptr, p), cpu.voxelize(view, nullptr, p), "one engine");
  }
}

TEST_P(VoxelDeviceTest, DeviceResidentEveryOutput) {
  // voxelize_device with non-finite points (outside the range) against the CPU on the finite points.
  auto xyz = test::duplicates(3001, 200, 29);
  const std::size_t n = xyz.size() / 3;
  const std::vector<std::size_t> bad = {0, 17, 18, 2999};
  xyz[3 * 17 + 1] = std::numeric_limits<float>::infinity();
  xyz[3 * 18 + 2] = -std::numeric_limits<float>::infinity();
  xyz[3 * 0] = std::numeric_limits<float>::quiet_NaN();
  xyz[3 * 2999 + 2] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> finite;
  std::vector<std::int32_t> row;  // device row of each finite point
  for (std::size_t i = 0; i < n; ++i)
    if (std::find(bad.begin(), bad.end(), i) == bad.end()) {
      finite.insert(finite.end(), xyz.begin() + 3 * i, xyz.begin() + 3 * i + 3);
      row.push_back(static_cast<std::int32_t>(i));
    }
  VoxelEngine engine(GetParam());
  if (!GetParam().is_cuda()) GTEST_SKIP() << "device-resident voxels need CUDA";
  DeviceBuffer<float> points(xyz.size());
  points.copy_from_host_async(xyz.data(), xyz.size(), nullptr);
  s3d::synchronize(nullptr);
  for (int max_points : {1, 5, 40})
    for (std::int64_t max_voxels : {0, 50})
      for (VoxelAggregate g : kAggregates) {
        VoxelizeParams p = params(VoxelOrigin::kRange, g, 0.06f);
        p.range = {0.1f, 0.f, 0.f, 0.9f, 1.f, 0.7f};
        p.max_points_per_voxel = max_points;
        p.max_voxels = max_voxels;
        p.min_points_per_voxel = 2;
        const Voxels want = VoxelEngine(Device::parse("cpu")).voxelize({finite.data(), finite.size() / 3}, nullptr, p);
        for (int repeat = 0; repeat < 3; ++repeat) {  // eager, captured, replayed
          const DeviceVoxels got = engine.voxelize_device({points.data(), n}, p);
          ASSERT_EQ(got.count, want.count);
          EXPECT_EQ(got.dropped_out_of_range, want.dropped_out_of_range + static_cast<std::int64_t>(bad.size()));
          EXPECT_EQ(got.dropped_over_max_points, want.dropped_over_max_points);
          EXPECT_EQ(got.dropped_over_max_voxels, want.dropped_over_max_voxels);
          const std::size_t m = static_cast<std::size_t>(got.count);
          std::vector<std::int32_t> coords(4 * m), per_voxel(m), representative(m), point_voxel(n);
          std::vector<float> centres(3 * m);
          s3d::detail::copy_bytes_async(coords.data(), got.coords, coords.size() * 4, 2, nullptr);
          s3d::detail::copy_bytes_async(per_voxel.data(), got.points_per_voxel, m * 4, 2, nullptr);
          s3d::detail::copy_bytes_async(representative.data(), got.representative, m * 4, 2, nullptr);
          s3d::detail::copy_bytes_async(centres.data(), got.xyz, centres.size() * 4, 2, nullptr);
          s3d::detail::copy_bytes_async(point_voxel.data(), got.point_voxel, n * 4, 2, nullptr);
          s3d::synchronize(nullptr);
          EXPECT_EQ(coords, want.coords);
          EXPECT_EQ(per_voxel, want.points_per_voxel);
          if (m) EXPECT_EQ(0, std::memcmp(centres.data(), want.xyz.data(), centres.size() * 4));
          for (std::size_t v = 0; v < m; ++v) ASSERT_EQ(representative[v], row[want.representative[v]]) << v;
          for (std::size_t j = 0; j < row.size(); ++j) ASSERT_EQ(point_voxel[row[j]], want.point_voxel[j]) << j;
          for (std::size_t i : bad) EXPECT_EQ(point_voxel[i], -1) << i;
        }
      }
}

TEST_P(VoxelDeviceTest, RealBunny) {
  S3D_REQUIRE_DATA(path, "pointclouds/stanford_bunny/bun_zipper.ply");
  const auto xyz = test::read_ascii_ply_xyz(path);
  ASSERT_EQ(xyz.size(), 3u * 35947);
  for (VoxelOrigin o : {VoxelOrigin::kWorld, VoxelOrigin::kMinBound})
    for (VoxelAggregate g : kAggregates) check(xyz, params(o, g, 0.002f), "bunny");
}

TEST_P(VoxelDeviceTest, RejectsBadInput) {
  VoxelEngine engine(GetParam());
  std::vector<float> xyz = {0.f, 0.f, 0.f, 1.f, 1.f, 1.f};
  const PointsView<const float> view{xyz.data(), 2};
  VoxelizeParams p;
  for (float bad :
       {0.f, -0.1f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1e-39f}) {
    p.voxel_size = {0.1f, bad, 0.1f};
    EXPECT_THROW(engine.voxelize(view, nullptr, p), InvalidArgument) << bad;
  }
  p = VoxelizeParams{};
  p.min_points_per_voxel = 0;
  EXPECT_THROW(engine.voxelize(view, nullptr, p), InvalidArgument);
  p = VoxelizeParams{};
  p.origin = VoxelOrigin::kRange;  // the default range is empty
  EXPECT_THROW(engine.voxelize(view, nullptr, p), InvalidArgument);
  p = VoxelizeParams{};
  const std::int32_t negative[2] = {0, -1};
  EXPECT_THROW(engine.voxelize(view, negative, p), InvalidArgument);
  xyz[4] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(engine.voxelize(view, nullptr, p), DataError);
  // 2e10 m at 1e-3 m: 2e13 cells along x, beyond int32 coordinates; 1e6 cells per axis cubed x 5000 batches
  // is beyond 2^62.
  const std::vector<float> far = {-1e10f, 0.f, 0.f, 1e10f, 0.f, 0.f};
  p.voxel_size = {1e-3f, 1e-3f, 1e-3f};
  EXPECT_THROW(engine.voxelize({far.data(), 2}, nullptr, p), DataError);
  const std::vector<float> wide = {0.f, 0.f, 0.f, 999.f, 999.f, 999.f};
  const std::int32_t many[2] = {0, 5000000};
  EXPECT_THROW(engine.voxelize({wide.data(), 2}, many, p), DataError);
}

INSTANTIATE_TEST_SUITE_P(Devices, VoxelDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::points
