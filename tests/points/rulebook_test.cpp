// Rulebooks on every device against a plain reference written here (pairs enumerated from the input side, a
// std::map of coordinates, outputs as a sorted set), and CUDA byte for byte against the CPU: submanifold,
// strided, anisotropic and dilated kernels, batches, 64-bit keys, empty and one-voxel inputs, the KITTI scan
// voxelised at 0.05 m; the inverse rulebook; the hash table on its own (duplicates, 64-bit keys, a full table).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "cloud_fixtures.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/points/rulebook.hpp"
#include "test_support.hpp"

namespace s3d::points {
namespace detail {
std::vector<std::int32_t> probe_voxel_table(const Device& device, const std::vector<std::uint64_t>& keys,
                                            std::uint64_t capacity, const std::vector<std::uint64_t>& queries);
}  // namespace detail

namespace {

using Coord = std::array<std::int32_t, 4>;

/// The reference: every (input, tap) pair that lands on an output cell, grouped by offset, sorted by (out, in).
Rulebook reference(const SparseCoords& in, ConvSpec spec) {
  Rulebook rb;
  rb.kernel_volume = spec.volume();
  rb.inputs = in.count();
  rb.out.batch_size = in.batch_size;
  std::array<int, 3> pad = spec.padding, stride = spec.stride;
  std::array<std::int64_t, 3> out_shape{};
  for (int a = 0; a < 3; ++a) {
    if (spec.subm) {
      pad[a] = spec.kernel[a] / 2 * spec.dilation[a];
      stride[a] = 1;
      out_shape[a] = in.shape[a];
    } else {
      out_shape[a] = (in.shape[a] + 2 * pad[a] - spec.dilation[a] * (spec.kernel[a] - 1) - 1) / stride[a] + 1;
    }
    rb.out.shape[a] = static_cast<std::int32_t>(out_shape[a]);
  }
  std::map<Coord, std::int32_t> out_row;
  std::vector<Coord> outs;
  if (spec.subm) {
    for (std::int64_t r = 0; r < in.count(); ++r) {
      const Coord c{in.coords[4 * r], in.coords[4 * r + 1], in.coords[4 * r + 2], in.coords[4 * r + 3]};
      out_row[c] = static_cast<std::int32_t>(r);
      outs.push_back(c);
    }
  }
  // taps[k] for k = (kz * KY + ky) * KX + kx
  std::vector<std::array<int, 3>> taps;
  for (int kz = 0; kz < spec.kernel[0]; ++kz)
    for (int ky = 0; ky < spec.kernel[1]; ++ky)
      for (int kx = 0; kx < spec.kernel[2]; ++kx) taps.push_back({kz, ky, kx});
  std::vector<std::vector<std::pair<Coord, std::int32_t>>> hits(taps.size());  // (output cell, input row)
  std::set<Coord> candidates;
  for (std::int64_t r = 0; r < in.count(); ++r) {
    const std::int32_t* c = &in.coords[4 * r];
    for (std::size_t k = 0; k < taps.size(); ++k) {
      Coord o{c[0], 0, 0, 0};
      bool ok = true;
      for (int a = 0; a < 3 && ok; ++a) {
        const long long t =
            static_cast<long long>(c[1 + a]) + pad[a] - static_cast<long long>(taps[k][a]) * spec.dilation[a];
        ok = t >= 0 && t % stride[a] == 0 && t / stride[a] < out_shape[a];
        if (ok) o[1 + a] = static_cast<std::int32_t>(t / stride[a]);
      }
      if (!ok) continue;
      if (spec.subm && !out_row.count(o)) continue;
      hits[k].emplace_back(o, static_cast<std::int32_t>(r));
      candidates.insert(o);
    }
  }
  if (!spec.subm) {
    for (const Coord& o : candidates) {  // std::set order of (b, z, y, x) is the linear order
      out_row[o] = static_cast<std::int32_t>(outs.size());
      outs.push_back(o);
    }
  }
  for (const Coord& o : outs) rb.out.coords.insert(rb.out.coords.end(), o.begin(), o.end());
  rb.offsets.push_back(0);
  for (auto& h : hits) {
    std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
    for (const auto& [o, i] : h) pairs.emplace_back(out_row.at(o), i);
    std::sort(pairs.begin(), pairs.end());
    for (const auto& [o, i] : pairs) {
      rb.out_index.push_back(o);
      rb.in_index.push_back(i);
    }
    rb.counts.push_back(static_cast<std::int32_t>(pairs.size()));
    rb.offsets.push_back(static_cast<std::int64_t>(rb.in_index.size()));
  }
  return rb;
}

void expect_same(const Rulebook& got, const Rulebook& want, const char* what) {
  EXPECT_EQ(got.kernel_volume, want.kernel_volume) << what;
  EXPECT_EQ(got.inputs, want.inputs) << what;
  EXPECT_EQ(got.out.shape, want.out.shape) << what;
  EXPECT_EQ(got.out.coords, want.out.coords) << what;
  EXPECT_EQ(got.counts, want.counts) << what;
  EXPECT_EQ(got.offsets, want.offsets) << what;
  EXPECT_EQ(got.in_index, want.in_index) << what;
  EXPECT_EQ(got.out_index, want.out_index) << what;
}

/// `n` distinct random cells of a (batch, shape) grid, in random order.
SparseCoords random_coords(std::size_t n, std::array<std::int32_t, 3> shape, int batch, unsigned seed) {
  std::mt19937 rng(seed);
  std::set<Coord> seen;
  SparseCoords s;
  s.shape = shape;
  s.batch_size = batch;
  while (seen.size() < n) {
    const Coord c{static_cast<std::int32_t>(rng() % batch), static_cast<std::int32_t>(rng() % shape[0]),
                  static_cast<std::int32_t>(rng() % shape[1]), static_cast<std::int32_t>(rng() % shape[2])};
    if (seen.insert(c).second) s.coords.insert(s.coords.end(), c.begin(), c.end());
  }
  return s;
}

/// The KITTI scan voxelised at 0.05 m (cells from floor(p / 0.05), shifted to start at 0), first-seen order.
SparseCoords kitti_voxels(const std::vector<float>& xyz) {
  std::vector<std::array<std::int32_t, 3>> cells;
  std::array<std::int32_t, 3> lo{INT32_MAX, INT32_MAX, INT32_MAX}, hi{INT32_MIN, INT32_MIN, INT32_MIN};
  for (std::size_t i = 0; i < xyz.size(); i += 3) {
    std::array<std::int32_t, 3> c{};
    for (int a = 0; a < 3; ++a) c[a] = static_cast<std::int32_t>(std::floor(xyz[i + 2 - a] / 0.05f));  // z, y, x
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], c[a]);
      hi[a] = std::max(hi[a], c[a]);
    }
    cells.push_back(c);
  }
  SparseCoords s;
  for (int a = 0; a < 3; ++a) s.shape[a] = hi[a] - lo[a] + 1;
  std::set<std::array<std::int32_t, 3>> seen;
  for (auto c : cells) {
    for (int a = 0; a < 3; ++a) c[a] -= lo[a];
    if (seen.insert(c).second) s.coords.insert(s.coords.end(), {0, c[0], c[1], c[2]});
  }
  return s;
}

ConvSpec spec_of(int k, int s, int p, int d = 1, bool subm = false) {
  ConvSpec spec;
  spec.kernel = {k, k, k};
  spec.stride = {s, s, s};
  spec.padding = {p, p, p};
  spec.dilation = {d, d, d};
  spec.subm = subm;
  return spec;
}

class RulebookDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }

  /// Builds on this device, checks against the reference and (CUDA) against the CPU byte for byte.
  Rulebook check(const SparseCoords& in, const ConvSpec& spec, const char* what) {
    RulebookEngine engine(GetParam());
    Rulebook got = engine.build(in, spec);
    expect_same(got, reference(in, spec), what);
    if (!GetParam().is_cpu()) expect_same(got, RulebookEngine(Device(Device::Kind::kCpu)).build(in, spec), what);
    return got;
  }
};

TEST_P(RulebookDeviceTest, SubmanifoldAndStridedOnRandomCells) {
  const SparseCoords in = random_coords(3001, {17, 40, 33}, 1, 1);
  check(in, spec_of(3, 1, 1, 1, true), "subm k3");
  check(in, spec_of(5, 1, 0, 2, true), "subm k5 d2");
  check(in, spec_of(3, 2, 1), "k3 s2 p1");
  check(in, spec_of(2, 2, 0), "k2 s2 p0");
  check(in, spec_of(3, 1, 0), "k3 s1 p0 (outputs grow)");
  check(in, spec_of(1, 1, 0), "k1");
}

TEST_P(RulebookDeviceTest, AnisotropicDilatedAndBatched) {
  const SparseCoords in = random_coords(2500, {9, 31, 28}, 3, 2);
  ConvSpec spec;
  spec.kernel = {3, 1, 3};
  spec.stride = {2, 1, 3};
  spec.padding = {1, 0, 2};
  spec.dilation = {2, 1, 1};
  check(in, spec, "anisotropic");
  ConvSpec subm;
  subm.kernel = {1, 3, 5};
  subm.dilation = {1, 2, 1};
  subm.subm = true;
  check(in, subm, "subm anisotropic");
}

TEST_P(RulebookDeviceTest, EmptyOneVoxelAndCorners) {
  SparseCoords empty;
  empty.shape = {4, 5, 6};
  const Rulebook e = check(empty, spec_of(3, 1, 1, 1, true), "empty subm");
  EXPECT_EQ(e.pairs(), 0);
  EXPECT_EQ(e.offsets, std::vector<std::int64_t>(28, 0));
  check(empty, spec_of(3, 2, 1), "empty strided");
  SparseCoords one;
  one.shape = {1, 1, 1};
  one.coords = {0, 0, 0, 0};
  EXPECT_EQ(check(one, spec_of(3, 1, 1, 1, true), "one subm").pairs(), 1);
  check(one, spec_of(3, 2, 1), "one strided");
  SparseCoords corners;
  corners.shape = {3, 4, 5};
  for (int z : {0, 2})
    for (int y : {0, 3})
      for (int x : {0, 4}) corners.coords.insert(corners.coords.end(), {0, z, y, x});
  check(corners, spec_of(3, 1, 1, 1, true), "corners subm");
  check(corners, spec_of(3, 2, 1), "corners strided");
  check(corners, spec_of(3, 3, 2, 2), "corners dilated");
}

TEST_P(RulebookDeviceTest, SixtyFourBitKeys) {
  // 2 x 3000 x 2^20 x 2^20 cells: linear keys past 2^32 (and outputs too).
  SparseCoords in = random_coords(1500, {3000, 1 << 20, 1 << 20}, 2, 3);
  // Clusters, so that neighbours exist: each random cell with its +x and +y,+z neighbours.
  SparseCoords dense;
  dense.shape = in.shape;
  dense.batch_size = 2;
  std::set<Coord> seen;
  for (std::int64_t r = 0; r < in.count(); ++r)
    for (const Coord d : {Coord{0, 0, 0, 0}, Coord{0, 0, 0, 1}, Coord{0, 1, 1, 0}}) {
      Coord c{in.coords[4 * r], in.coords[4 * r + 1] + d[1], in.coords[4 * r + 2] + d[2], in.coords[4 * r + 3] + d[3]};
      if (c[1] < dense.shape[0] && c[2] < dense.shape[1] && c[3] < dense.shape[2] && seen.insert(c).second)
        dense.coords.insert(dense.coords.end(), c.begin(), c.end());
    }
  const Rulebook subm = check(dense, spec_of(3, 1, 1, 1, true), "64-bit subm");
  EXPECT_GT(subm.pairs(), dense.count());  // neighbours were found across 64-bit keys
  check(dense, spec_of(3, 2, 1), "64-bit strided");
}

TEST_P(RulebookDeviceTest, KittiScanAtFiveCentimetres) {
  S3D_REQUIRE_DATA(path, "pointclouds/kitti_velodyne/000000.bin");
  const SparseCoords in = kitti_voxels(test::read_kitti_bin(path));
  ASSERT_GT(in.count(), 50000);
  const Rulebook subm = check(in, spec_of(3, 1, 1, 1, true), "kitti subm k3");
  EXPECT_EQ(subm.counts[13], in.count());  // the centre offset: every voxel reads itself
  check(in, spec_of(3, 2, 1), "kitti k3 s2");
}

TEST_P(RulebookDeviceTest, InverseSwapsAndResortsTheForwardPairs) {
  const SparseCoords in = random_coords(2000, {12, 30, 30}, 2, 4);
  RulebookEngine engine(GetParam());
  for (const ConvSpec& spec : {spec_of(3, 2, 1), spec_of(3, 1, 1, 1, true)}) {
    const Rulebook fwd = engine.build(in, spec);
    const Rulebook inv = engine.inverse(fwd, in);
    EXPECT_EQ(inv.inputs, fwd.out.count());
    EXPECT_EQ(inv.out.coords, in.coords);
    EXPECT_EQ(inv.counts, fwd.counts);
    for (int k = 0; k < fwd.kernel_volume; ++k) {
      std::vector<std::pair<std::int32_t, std::int32_t>> want, got;  // (out, in)
      for (std::int64_t p = fwd.offsets[k]; p < fwd.offsets[k + 1]; ++p)
        want.emplace_back(fwd.in_index[p], fwd.out_index[p]);
      for (std::int64_t p = inv.offsets[k]; p < inv.offsets[k + 1]; ++p)
        got.emplace_back(inv.out_index[p], inv.in_index[p]);
      std::sort(want.begin(), want.end());
      ASSERT_EQ(got, want) << "offset " << k;
    }
    const Rulebook back = engine.inverse(inv, fwd.out);
    EXPECT_EQ(back.in_index, fwd.in_index);
    EXPECT_EQ(back.out_index, fwd.out_index);
  }
}

TEST_P(RulebookDeviceTest, DeviceResidentMatchesHost) {
  const SparseCoords in = random_coords(4000, {20, 50, 40}, 2, 8);
  RulebookEngine engine(GetParam());
  if (GetParam().is_cpu()) {
    EXPECT_THROW(engine.build_device(in.coords.data(), in.count(), in.shape, 2, spec_of(3, 1, 1, 1, true)),
                 InvalidArgument);
    return;
  }
  DeviceBuffer<std::int32_t> coords(in.coords.size());
  coords.copy_from_host_async(in.coords.data(), in.coords.size(), nullptr);
  for (const ConvSpec& spec : {spec_of(3, 1, 1, 1, true), spec_of(3, 2, 1)}) {
    const Rulebook want = engine.build(in, spec);
    const DeviceRulebook got = engine.build_device(coords.data(), in.count(), in.shape, 2, spec);
    EXPECT_EQ(got.offsets, want.offsets);
    ASSERT_EQ(got.outputs, want.out.count());
    std::vector<std::int32_t> in_index(want.in_index.size()), out_index(want.out_index.size()),
        out_coords(want.out.coords.size());
    s3d::detail::copy_bytes_async(in_index.data(), got.in_index, in_index.size() * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(out_index.data(), got.out_index, out_index.size() * 4, 2, nullptr);
    s3d::detail::copy_bytes_async(out_coords.data(), got.out_coords, out_coords.size() * 4, 2, nullptr);
    s3d::synchronize(nullptr);
    EXPECT_EQ(in_index, want.in_index);
    EXPECT_EQ(out_index, want.out_index);
    EXPECT_EQ(out_coords, want.out.coords);
  }
  SparseCoords bad = in;
  bad.coords[4 * 9 + 3] = 40;  // x outside [0, 40)
  coords.copy_from_host_async(bad.coords.data(), bad.coords.size(), nullptr);
  try {
    engine.build_device(coords.data(), bad.count(), bad.shape, 2, spec_of(3, 2, 1));
    ADD_FAILURE() << "a row outside the grid accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("row 9"), std::string::npos) << e.what();
  }
}

TEST_P(RulebookDeviceTest, SpconvLayout) {
  const SparseCoords in = random_coords(500, {8, 20, 20}, 1, 5);
  const Rulebook rb = RulebookEngine(GetParam()).build(in, spec_of(3, 2, 1));
  const std::vector<std::int32_t> pairs = rb.spconv_pairs(in.count());
  ASSERT_EQ(pairs.size(), 2u * 27u * 500u);
  for (int k = 0; k < 27; ++k)
    for (std::int64_t j = 0; j < 500; ++j) {
      const bool used = j < rb.counts[k];
      EXPECT_EQ(pairs[k * 500 + j], used ? rb.in_index[rb.offsets[k] + j] : -1);
      EXPECT_EQ(pairs[(27 + k) * 500 + j], used ? rb.out_index[rb.offsets[k] + j] : -1);
    }
  EXPECT_THROW(rb.spconv_pairs(0), InvalidArgument);
}

TEST_P(RulebookDeviceTest, RejectsBadInput) {
  RulebookEngine engine(GetParam());
  SparseCoords in = random_coords(50, {4, 4, 4}, 1, 6);
  SparseCoords dup = in;
  dup.coords.insert(dup.coords.end(), in.coords.begin() + 4 * 7, in.coords.begin() + 4 * 8);
  try {
    engine.build(dup, spec_of(3, 1, 1, 1, true));
    ADD_FAILURE() << "duplicate accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("row 50"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("repeats row 7"), std::string::npos) << e.what();
  }
  SparseCoords outside = in;
  outside.coords[4 * 3 + 2] = 4;
  EXPECT_THROW(engine.build(outside, spec_of(3, 2, 1)), DataError);
  SparseCoords bad_batch = in;
  bad_batch.coords[0] = 1;
  EXPECT_THROW(engine.build(bad_batch, spec_of(3, 2, 1)), DataError);
  EXPECT_THROW(engine.build(in, spec_of(2, 1, 0, 1, true)), InvalidArgument);  // even subm kernel
  EXPECT_THROW(engine.build(in, spec_of(3, 0, 1)), InvalidArgument);
  EXPECT_THROW(engine.build(in, spec_of(0, 1, 1)), InvalidArgument);
  EXPECT_THROW(engine.build(in, spec_of(7, 1, 0)), DataError);  // kernel larger than the grid
  SparseCoords overflow;
  overflow.shape = {INT32_MAX, INT32_MAX, INT32_MAX};
  overflow.batch_size = 4;
  overflow.coords = {0, 1, 1, 1};
  EXPECT_THROW(engine.build(overflow, spec_of(3, 1, 1, 1, true)), DataError);  // > 2^63 cells
  SparseCoords vanish;  // stride 3 over 4 cells with a 1-kernel: x = 1 reaches no output
  vanish.shape = {4, 4, 4};
  vanish.coords = {0, 1, 1, 1};
  EXPECT_THROW(engine.build(vanish, spec_of(1, 3, 0)), DataError);
}

TEST_P(RulebookDeviceTest, HashTableStress) {
  const Device device = GetParam();
  // Keys with low bits alike (strided) and past 2^32; half the queries absent.
  for (const std::uint64_t base : {std::uint64_t{0}, std::uint64_t{1} << 40}) {
    std::vector<std::uint64_t> keys, queries;
    for (std::uint64_t i = 0; i < 20000; ++i) keys.push_back(base + i * 4096);
    for (std::uint64_t i = 0; i < 40000; ++i) queries.push_back(base + i * 2048);
    const std::vector<std::int32_t> rows = detail::probe_voxel_table(device, keys, 1 << 16, queries);
    for (std::size_t q = 0; q < queries.size(); ++q) ASSERT_EQ(rows[q], q % 2 == 0 ? std::int32_t(q / 2) : -1) << q;
  }
  // Exactly full works; one more key is rejected with a clear error instead of probing forever.
  std::vector<std::uint64_t> keys(64);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = 7 * i + 3;
  EXPECT_EQ(detail::probe_voxel_table(device, keys, 64, {3, 10, 4}), (std::vector<std::int32_t>{0, 1, -1}));
  keys.push_back(1000);
  try {
    detail::probe_voxel_table(device, keys, 64, {});
    ADD_FAILURE() << "a full table accepted a key";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
  }
  EXPECT_THROW(detail::probe_voxel_table(device, {5, 9, 5}, 64, {}), DataError);  // duplicate
}

INSTANTIATE_TEST_SUITE_P(Devices, RulebookDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::points
