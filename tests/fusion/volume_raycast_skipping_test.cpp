// The CPU backend's ray casts: 8 rays at a time with AVX2 (raycast_lanes.hpp), each lane skipping empty space as
// the scalar march without AVX2 does (raycast_skipping.hpp). Their maps must equal the plain march (raycast_pixel, the
// one the CUDA kernel runs) bit for bit, the skipping one in its AVX2 and baseline row loops alike, and the brick
// distances must be the Chebyshev distances to the bricks with a negative voxel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "raycast_lanes.hpp"
#include "raycast_skipping.hpp"
#include "s3d/core/cpu_dispatch.hpp"
#include "tsdf_math.hpp"
#include "volume_common.hpp"
#include "volume_test_support.hpp"

namespace s3d::fusion::test {
namespace {

using detail::BrickMap;
using detail::VolumeGrid;
using detail::Voxel;

/// The voxels of a CPU volume that integrated redkitchen frames first..last (step 4) at their poses.
std::vector<Voxel> fused_voxels(const VolumeParams& p, int first, int last) {
  TestVolume volume(Device(Device::Kind::kCpu), p);
  for (int f = first; f <= last; f += 4)
    volume.integrate(s3d::test::read_redkitchen_depth(f), redkitchen_camera(), read_redkitchen_pose(f));
  std::vector<std::int16_t> tsdf, weight;
  volume.download(tsdf, weight);
  std::vector<Voxel> voxels(tsdf.size());
  for (std::size_t v = 0; v < tsdf.size(); ++v) voxels[v] = {tsdf[v], weight[v]};
  return voxels;
}

/// Both marches over every pixel; returns how many pixels hit a surface (asserting equality on the way).
int compare_marches(const std::vector<Voxel>& voxels, const VolumeGrid& g, const BrickMap& bricks,
                    const CameraIntrinsics& cam, const Eigen::Isometry3d& pose, int width, int height) {
  const detail::RaycastArgs a = detail::make_raycast_args(g, cam, to_rigid(pose), width, height);
  HostMaps plain, skipping;
  plain.vertices.resize(static_cast<std::size_t>(width) * height);
  plain.normals = skipping.vertices = skipping.normals = plain.vertices;
  int hits = 0;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * width + x;
      detail::raycast_pixel(voxels.data(), a, x, y, plain.vertices[p], plain.normals[p]);
      detail::raycast_pixel_skipping(voxels.data(), bricks, a, x, y, skipping.vertices[p], skipping.normals[p]);
      hits += detail::is_valid(plain.vertices[p]);
    }
  EXPECT_TRUE(same_maps(plain, skipping));
  // The backend's row loops: the AVX2 variant (where the CPU has it) and the baseline x86-64 one, into maps
  // that start out wrong (every pixel must be written).
  for (const char* isa : {"avx2", "baseline"}) {
    const s3d::test::ScopedCpuIsa scoped(isa);
    HostMaps rows = skipping;
    std::fill(rows.vertices.begin(), rows.vertices.end(), Vec3f{1e30f, -2.0f, 3.0f});
    rows.normals = rows.vertices;
    detail::raycast_skipping_cpu(voxels.data(), bricks, a, rows.vertices.data(), rows.normals.data());
    EXPECT_TRUE(same_maps(plain, rows)) << isa;
  }
  // 8 rays at a time (widths here are not all multiples of 8), each lane stepping through every sample and each
  // lane counting off the samples in empty space, into maps that start out wrong.
  for (const BrickMap* distances : {static_cast<const BrickMap*>(nullptr), &bricks}) {
    HostMaps lanes = skipping;
    std::fill(lanes.vertices.begin(), lanes.vertices.end(), Vec3f{1e30f, -2.0f, 3.0f});
    lanes.normals = lanes.vertices;
    const char* how = distances != nullptr ? "8 rays at a time, skipping" : "8 rays at a time";
    if (detail::raycast_lanes_cpu(voxels.data(), distances, a, lanes.vertices.data(), lanes.normals.data()))
      EXPECT_TRUE(same_maps(plain, lanes)) << how;
    else
      EXPECT_FALSE(cpu_avx2_enabled()) << "the AVX2 ray cast refused a grid of " << g.count() << " voxels";
  }
  return hits;
}

/// Chebyshev distance, in bricks, from every brick to the nearest one holding a negative voxel, capped: by
/// brute force over all pairs.
std::vector<int> brute_force_distances(const std::vector<Voxel>& voxels, const VolumeGrid& g, int s) {
  const int bx = (g.nx + s - 1) / s, by = (g.ny + s - 1) / s, bz = (g.nz + s - 1) / s;
  std::vector<int> negative;
  std::vector<char> is_negative(static_cast<std::size_t>(bx) * by * bz, 0);
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i)
        if (voxels[g.index(i, j, k)].tsdf < 0) is_negative[(k / s * by + j / s) * bx + i / s] = 1;
  for (int b = 0; b < bx * by * bz; ++b)
    if (is_negative[b]) negative.push_back(b);
  std::vector<int> out(static_cast<std::size_t>(bx) * by * bz, BrickMap::kMaxDistance);
  for (int z = 0; z < bz; ++z)
    for (int y = 0; y < by; ++y)
      for (int x = 0; x < bx; ++x)
        for (int c : negative) {
          const int d = std::max({std::abs(c % bx - x), std::abs(c / bx % by - y), std::abs(c / (bx * by) - z)});
          int& o = out[(z * by + y) * bx + x];
          o = std::min(o, d);
        }
  return out;
}

TEST(RaycastSkipping, BrickDistancesAreChebyshevDistances) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  VolumeParams p = redkitchen_volume(64, 0.05f);
  p.resolution = {61, 70, 45};  // no axis a multiple of the brick side
  const VolumeGrid g = detail::make_grid(p);
  const std::vector<Voxel> voxels = fused_voxels(p, 0, 20);
  BrickMap bricks;
  bricks.build(voxels.data(), g);
  const int s = 1 << bricks.shift();
  const std::vector<int> expected = brute_force_distances(voxels, g, s);
  int zero = 0, capped = 0, between = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        const int want = expected[(k / s * bricks.count(1) + j / s) * bricks.count(0) + i / s];
        ASSERT_EQ(bricks.distance(i, j, k), want) << i << " " << j << " " << k;
        zero += want == 0;
        capped += want == BrickMap::kMaxDistance;
        between += want > 0 && want < BrickMap::kMaxDistance;
      }
  EXPECT_GT(zero, 0);  // the data has surfaces, free space and everything between
  EXPECT_GT(capped, 0);
  EXPECT_GT(between, 0);
}

TEST(RaycastSkipping, EqualsThePlainMarchOnRealFrames) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = redkitchen_volume(128, 0.03f);
  const VolumeGrid g = detail::make_grid(p);
  const std::vector<Voxel> voxels = fused_voxels(p, 0, 40);
  BrickMap bricks;
  bricks.build(voxels.data(), g);
  int hits = 0;
  for (int f : {0, 20, 40, 60})
    hits += compare_marches(voxels, g, bricks, redkitchen_camera().level(1), read_redkitchen_pose(f), 320, 240);
  // Full-size intrinsics on an odd map size (the image's top-left part).
  hits += compare_marches(voxels, g, bricks, redkitchen_camera(), read_redkitchen_pose(30), 317, 239);
  EXPECT_GT(hits, 4 * 320 * 240 / 2);
}

TEST(RaycastSkipping, EqualsThePlainMarchFromOutsideAndOnOddGrids) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  // Non-cubic voxels, sizes that are not multiples of the brick side, the truncation of KinFu's volume.
  VolumeParams p = redkitchen_volume(64, 0.03f);
  p.resolution = {101, 77, 93};
  p.size = {3.0f, 2.5f, 2.8f};
  const VolumeGrid g = detail::make_grid(p);
  const std::vector<Voxel> voxels = fused_voxels(p, 0, 40);
  BrickMap bricks;
  bricks.build(voxels.data(), g);
  const Eigen::Vector3d centre(p.origin[0] + 1.5, p.origin[1] + 1.25, p.origin[2] + 1.4);
  int hits = 0;
  hits += compare_marches(voxels, g, bricks, redkitchen_camera(), read_redkitchen_pose(20), 161, 121);
  hits +=
      compare_marches(voxels, g, bricks, redkitchen_camera().level(3), read_redkitchen_pose(20), 13, 5);  // < 2 groups
  // From outside the box on three sides, looking at its centre; from inside looking back at the camera.
  for (const Eigen::Vector3d& eye : {Eigen::Vector3d(centre.x(), centre.y(), p.origin[2] - 1.0),
                                     Eigen::Vector3d(p.origin[0] - 0.7, centre.y() + 0.3, centre.z()),
                                     Eigen::Vector3d(centre.x() + 0.2, p.origin[1] + 3.9, centre.z() - 0.4), centre})
    hits += compare_marches(voxels, g, bricks, redkitchen_camera().level(1),
                            look_at(eye, centre + (centre - eye) * 0.1 + Eigen::Vector3d(0.01, 0.02, 0.03)), 160, 120);
  EXPECT_GT(hits, 161 * 121 / 4);
}

// The backend itself: integrate, ray cast, integrate, ... against the plain march over the voxels it holds at
// each ray cast, with AVX2 (8 rays at a time, counting off samples in bricks the integration left unmarked) and
// without (skipping by the distances, recomputed after each integration from those marks); also on a grid whose
// longest side (300) takes bricks of 8^3.
TEST(RaycastSkipping, BackendEqualsThePlainMarchFrameAfterFrame) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  VolumeParams wide = redkitchen_volume(64, 0.03f);
  wide.resolution = {300, 90, 110};
  for (const char* isa : {"avx2", "baseline"})
    for (const VolumeParams& p : {redkitchen_volume(128, 0.03f), wide}) {
      const s3d::test::ScopedCpuIsa scoped(isa);
      const VolumeGrid g = detail::make_grid(p);
      TestVolume volume(Device(Device::Kind::kCpu), p);
      const CameraIntrinsics cam = redkitchen_camera().level(1);
      for (int f = 0; f <= 60; f += 12) {
        volume.integrate(s3d::test::read_redkitchen_depth(f), redkitchen_camera(), read_redkitchen_pose(f));
        const HostMaps backend = volume.raycast(cam, read_redkitchen_pose(f), 320, 240);
        std::vector<std::int16_t> tsdf, weight;
        volume.download(tsdf, weight);
        std::vector<Voxel> voxels(tsdf.size());
        for (std::size_t v = 0; v < tsdf.size(); ++v) voxels[v] = {tsdf[v], weight[v]};
        const detail::RaycastArgs a = detail::make_raycast_args(g, cam, to_rigid(read_redkitchen_pose(f)), 320, 240);
        HostMaps plain = backend;
        int hits = 0;
        for (int y = 0; y < 240; ++y)
          for (int x = 0; x < 320; ++x) {
            const std::size_t i = static_cast<std::size_t>(y) * 320 + x;
            detail::raycast_pixel(voxels.data(), a, x, y, plain.vertices[i], plain.normals[i]);
            hits += detail::is_valid(plain.vertices[i]);
          }
        EXPECT_TRUE(same_maps(plain, backend)) << "frame " << f << ", " << p.resolution[0] << " voxels in x, " << isa;
        EXPECT_GT(hits, 320 * 240 / 4) << "frame " << f;
      }
    }
}

// The claim the skipping rests on: every float t in a cube's interval puts the float sample's floor voxel inside
// the cube, for rays nearly parallel to an axis, cameras far away, tiny voxels, and t right at the interval's
// ends.
TEST(RaycastSkipping, EverySampleInACubesIntervalLiesInTheCube) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  int checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    VolumeParams p;
    const int n = 8 + static_cast<int>(rng() % 300);
    p.resolution = {n, 8 + static_cast<int>(rng() % 100), 8 + static_cast<int>(rng() % 100)};
    const float side = trial % 4 == 0 ? 0.05f : 3.0f;  // voxels of 0.1-6 mm or 1-38 cm
    p.size = {side, side * 0.7f, side * 1.3f};
    const VolumeGrid g = detail::make_grid(p);
    const float far = trial % 3 == 0 ? 50.0f : 1.0f;
    const Vec3f start = {side * 0.5f + far * unit(rng), side * 0.35f + far * unit(rng), side * 0.65f + far * unit(rng)};
    Vec3f dir = {unit(rng), unit(rng), unit(rng)};
    if (trial % 5 == 0) dir = {1.0f, 1e-7f * unit(rng), 1e-6f * unit(rng)};  // nearly along x
    const float len = std::sqrt(detail::squared_norm(dir));
    dir = {dir.x / len, dir.y / len, dir.z / len};
    if (dir.x == 0.0f) dir.x = 1e-15f;
    if (dir.y == 0.0f) dir.y = 1e-15f;
    if (dir.z == 0.0f) dir.z = 1e-15f;
    const float max_t = detail::march_limit(g) + 3.0f * far;
    const detail::SkipRay ray(start, dir, detail::skip_margin(start, max_t));
    const int cells[3] = {g.nx, g.ny, g.nz};
    int first[3], end[3];
    for (int a = 0; a < 3; ++a) {
      first[a] = static_cast<int>(rng() % cells[a]);
      end[a] = first[a] + 1 + static_cast<int>(rng() % (cells[a] - first[a]));
    }
    double lo, hi;
    ray.interval(g, first, end, lo, hi);
    if (!(lo <= hi) || hi < 0.0 || lo > max_t) continue;
    const float t0 = std::max(static_cast<float>(lo), 0.0f), t1 = std::min(static_cast<float>(hi), max_t);
    std::vector<float> ts;
    for (float t = t0, k = 0; k < 4; ++k, t = std::nextafter(t, INFINITY)) ts.push_back(t);
    for (float t = t1, k = 0; k < 4; ++k, t = std::nextafter(t, -INFINITY)) ts.push_back(t);
    for (int k = 1; k < 8; ++k) ts.push_back(t0 + (t1 - t0) * (k / 8.0f));
    for (float t : ts) {
      if (!(t >= lo && t <= hi)) continue;  // float rounding of the ends
      int c[3];
      ASSERT_TRUE(detail::sample_cell(g, detail::ray_point(start, dir, t), c[0], c[1], c[2])) << trial;
      for (int a = 0; a < 3; ++a) ASSERT_TRUE(c[a] >= first[a] && c[a] < end[a]) << trial << " axis " << a;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

// Without data: a fused sphere seen by a camera whose central ray is exactly axis-parallel (its zero direction
// components become 1e-15), by maps narrower than one group of 8, and from so far away that the entry lies
// beyond the march's limit.
TEST(RaycastSkipping, AxisParallelRaysNarrowMapsAndDistantCameras) {
  VolumeParams p;
  p.resolution = {37, 41, 29};
  p.size = {0.74f, 0.82f, 0.58f};
  p.origin = {-0.37f, -0.41f, 0.71f};
  p.truncation = 0.05f;
  const VolumeGrid g = detail::make_grid(p);
  const Eigen::Vector3d centre(0.0, 0.0, 1.0);
  TestVolume volume(Device(Device::Kind::kCpu), p);
  for (int f = 0; f < 3; ++f) {
    const Eigen::Isometry3d pose =
        look_at(centre + Eigen::Vector3d(0.3 * std::cos(f * 1.3), 0.2 * std::sin(f * 1.3), -1.0), centre);
    volume.integrate(render_sphere(synthetic_camera(), pose, 640, 480, centre, 0.2), synthetic_camera(), pose);
  }
  std::vector<std::int16_t> tsdf, weight;
  volume.download(tsdf, weight);
  std::vector<Voxel> voxels(tsdf.size());
  for (std::size_t v = 0; v < tsdf.size(); ++v) voxels[v] = {tsdf[v], weight[v]};
  BrickMap bricks;
  bricks.build(voxels.data(), g);
  const CameraIntrinsics integer_centre{100.0f, 100.0f, 8.0f, 6.0f};  // pixel (8, 6) looks along +z exactly
  int hits = compare_marches(voxels, g, bricks, integer_centre, Eigen::Isometry3d::Identity(), 17, 13);
  hits += compare_marches(voxels, g, bricks, integer_centre, Eigen::Isometry3d::Identity(), 5, 3);
  hits += compare_marches(voxels, g, bricks, synthetic_camera().level(3), look_at(Eigen::Vector3d(0, 0, 0.2), centre),
                          7, 60);
  EXPECT_GT(hits, 100);
  EXPECT_EQ(compare_marches(voxels, g, bricks, synthetic_camera().level(2),
                            look_at(Eigen::Vector3d(0, 0, -500.0), centre), 160, 120),
            0);  // the box is 500 m away, the march gives up after 3 * 2.14 m
}

TEST(RaycastSkipping, EmptyAndAllNegativeVolumes) {
  VolumeParams p;
  p.resolution = {37, 21, 30};
  p.size = {1.0f, 0.6f, 0.9f};
  p.origin = {-0.5f, -0.3f, 0.2f};
  const VolumeGrid g = detail::make_grid(p);
  const Eigen::Isometry3d pose = look_at(Eigen::Vector3d(0.1, 0.05, -0.2), Eigen::Vector3d(0, 0, 0.6));
  for (std::int16_t value : {std::int16_t{0}, std::int16_t{-5}, std::int16_t{300}}) {
    const std::vector<Voxel> voxels(static_cast<std::size_t>(g.count()), Voxel{value, 1});
    BrickMap bricks;
    bricks.build(voxels.data(), g);
    EXPECT_EQ(bricks.distance(0, 0, 0), value < 0 ? 0 : BrickMap::kMaxDistance);
    EXPECT_EQ(compare_marches(voxels, g, bricks, synthetic_camera().level(2), pose, 160, 120), 0);
  }
}

}  // namespace
}  // namespace s3d::fusion::test
