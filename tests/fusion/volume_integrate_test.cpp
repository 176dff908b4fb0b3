// TSDF integration: analytic values of a fronto-parallel plane, the weight cap, frames that miss the volume,
// odd resolutions, and the CUDA voxels against the CPU oracle's on real 7-Scenes frames (bit-exact).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "integrate_lanes.hpp"
#include "s3d/core/cpu_dispatch.hpp"
#include "s3d/core/errors.hpp"
#include "volume_common.hpp"
#include "volume_test_support.hpp"

namespace s3d::fusion::test {
namespace {

class VolumeIntegrate : public ::testing::TestWithParam<Device> {};

/// 80 x 60 x 60 voxels of 1 cm in front of a camera at the origin looking along +z.
VolumeParams plane_params() {
  VolumeParams p;
  p.resolution = {80, 60, 60};
  p.size = {0.8f, 0.6f, 0.6f};
  p.origin = {-0.4f, -0.3f, 0.7f};
  p.truncation = 0.03f;
  return p;
}

Image<float> constant_depth(float z) { return Image<float>(640, 480, 1, z); }

TEST_P(VolumeIntegrate, PlaneMatchesTheAnalyticRayDistance) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  // Constant truncation (KinFu), the default growth with depth, and a growth that reaches the cap.
  for (const float growth : {0.0f, 0.02f, 1.0f}) {
    SCOPED_TRACE(growth);
    VolumeParams p = plane_params();
    p.truncation_growth = growth;
    TestVolume volume(GetParam(), p);
    volume.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity());
    std::vector<std::int16_t> tsdf, weight;
    volume.download(tsdf, weight);
    // Every pixel's depth is 1 m: truncation + growth * 1 m, at most kMaxTruncationGrowth truncations.
    const double mu = growth == 0.0f ? 0.03 : std::min(0.03 + growth * 1.0, kMaxTruncationGrowth * 0.03);
    const double voxel = 0.01;
    int checked = 0, empty = 0;
    for (int k = 0; k < 60; ++k)
      for (int j = 0; j < 60; ++j)
        for (int i = 0; i < 80; ++i) {
          const Eigen::Vector3d c(-0.4 + (i + 0.5) * voxel, -0.3 + (j + 0.5) * voxel, 0.7 + (k + 0.5) * voxel);
          // The plane z = 1 along the voxel's own ray: distance |c| / c.z; the voxel sits at |c|.
          const double sdf = c.norm() / c.z() - c.norm();
          const std::size_t v = i + 80 * (j + 60 * static_cast<std::size_t>(k));
          if (sdf >= -mu + 0.002) {
            ASSERT_EQ(weight[v], 1) << i << " " << j << " " << k;
            const double expected = std::min(1.0, sdf / mu);
            // Pixel rounding changes the ray length by < 1 mm here; int16 storage by 1/32767.
            ASSERT_NEAR(tsdf[v] / 32767.0, expected, 0.001 / mu + 1e-4) << i << " " << j << " " << k;
            ++checked;
          } else if (sdf < -mu - 0.002) {
            ASSERT_EQ(weight[v], 0) << i << " " << j << " " << k;
            ++empty;
          }
        }
    EXPECT_GT(checked, 80 * 60 * 25);
    EXPECT_GT(empty, 80 * 60 * 15);
  }
}

TEST_P(VolumeIntegrate, WeightIsCappedAndTheMeanStaysPut) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  VolumeParams p = plane_params();
  p.max_weight = 3;
  TestVolume volume(GetParam(), p);
  volume.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity());
  std::vector<std::int16_t> once, w1;
  volume.download(once, w1);
  for (int f = 0; f < 5; ++f) volume.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity());
  std::vector<std::int16_t> tsdf, weight;
  volume.download(tsdf, weight);
  int capped = 0;
  for (std::size_t v = 0; v < tsdf.size(); ++v) {
    ASSERT_LE(weight[v], 3);
    if (w1[v] == 0) {
      ASSERT_EQ(weight[v], 0);
      continue;
    }
    ASSERT_EQ(weight[v], 3);
    ++capped;
    // The mean of equal samples stays within a rounding step or two of the first.
    ASSERT_LE(std::abs(tsdf[v] - once[v]), 2) << v;
  }
  EXPECT_GT(capped, 0);
}

TEST_P(VolumeIntegrate, NearerSurfaceMovesTheMean) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  VolumeParams p = plane_params();
  p.truncation_growth = 0.0f;  // one truncation for both depths
  TestVolume volume(GetParam(), p);
  volume.integrate(constant_depth(1.00f), synthetic_camera(), Eigen::Isometry3d::Identity());
  volume.integrate(constant_depth(1.01f), synthetic_camera(), Eigen::Isometry3d::Identity());
  std::vector<std::int16_t> tsdf, weight;
  volume.download(tsdf, weight);
  // The voxel on the optical axis at z = 0.995: sdf 5 mm and 15 mm, mean 10 mm.
  const std::size_t v = 40 + 80 * (30 + 60 * static_cast<std::size_t>(29));
  ASSERT_EQ(weight[v], 2);
  EXPECT_NEAR(tsdf[v] / 32767.0, 0.010 / 0.03, 0.002);
}

TEST_P(VolumeIntegrate, FrameOutsideTheVolumeChangesNothing) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  TestVolume volume(GetParam(), plane_params());
  // Looking away from the volume (along -z), and a frame with no valid depth.
  Eigen::Isometry3d away = look_at(Eigen::Vector3d(0, 0, 0), Eigen::Vector3d(0, 0, -1));
  volume.integrate(constant_depth(1.0f), synthetic_camera(), away);
  volume.integrate(constant_depth(0.0f), synthetic_camera(), Eigen::Isometry3d::Identity());
  // Beyond the volume: the camera sees a plane 5 m away; the volume lies more than mu in front of it.
  volume.integrate(constant_depth(5.0f), synthetic_camera(), Eigen::Isometry3d::Identity());
  std::vector<std::int16_t> tsdf, weight;
  volume.download(tsdf, weight);
  int updated = 0;
  for (std::size_t v = 0; v < tsdf.size(); ++v) {
    ASSERT_EQ(weight[v], tsdf[v] == 32767 ? 1 : 0) << v;  // only free space from the far plane
    updated += weight[v] != 0;
  }
  EXPECT_EQ(updated, static_cast<int>(tsdf.size()));  // every voxel is free space of the 5 m plane
  volume.reset();
  volume.download(tsdf, weight);
  for (std::size_t v = 0; v < tsdf.size(); ++v) ASSERT_TRUE(tsdf[v] == 0 && weight[v] == 0);
  // Entirely behind the camera.
  Eigen::Isometry3d behind = Eigen::Isometry3d::Identity();
  behind.translation() = Eigen::Vector3d(0, 0, 3.0);
  volume.integrate(constant_depth(1.0f), synthetic_camera(), behind);
  volume.download(tsdf, weight);
  for (std::size_t v = 0; v < tsdf.size(); ++v) ASSERT_EQ(weight[v], 0);
}

/// The per-column z range only skips voxels that tsdf_sample rejects: one frame into an empty volume updates
/// exactly the voxels a brute-force loop over every voxel accepts (camera inside the volume, oblique views,
/// negative fy, a random depth image with holes).
TEST_P(VolumeIntegrate, ColumnRangeSkipsOnlyRejectedVoxels) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  VolumeParams p;
  p.resolution = {45, 38, 51};
  p.size = {1.8f, 1.52f, 2.04f};
  p.origin = {-0.9f, -0.7f, -1.0f};
  p.truncation = 0.1f;
  const detail::VolumeGrid g = detail::make_grid(p);
  Image<float> depth(160, 120);
  std::uint32_t state = 12345;
  for (float& d : depth.data) {
    state = state * 1664525u + 1013904223u;
    d = (state >> 28) == 0 ? 0.0f : 0.3f + static_cast<float>(state >> 8) / 16777216.0f * 2.0f;
  }
  const CameraIntrinsics normal{100.0f, 100.0f, 79.5f, 59.5f}, flipped{90.0f, -110.0f, 70.0f, 61.0f};
  struct Case {
    Eigen::Isometry3d pose;
    CameraIntrinsics camera;
  };
  std::vector<Case> cases = {
      {Eigen::Isometry3d::Identity(), normal},
      {look_at(Eigen::Vector3d(0.1, 0.05, -0.2), Eigen::Vector3d(1, 0.7, 0.4)), normal},
      {look_at(Eigen::Vector3d(-1.5, 1.2, 2.0), Eigen::Vector3d(0, 0, 0)), flipped},
      {look_at(Eigen::Vector3d(0.3, -0.2, 0.1), Eigen::Vector3d(0.3, 1.0, 0.1), Eigen::Vector3d(0, 0, 1)), flipped},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    TestVolume volume(GetParam(), p);
    volume.integrate(depth, cases[c].camera, cases[c].pose);
    std::vector<std::int16_t> tsdf, weight;
    volume.download(tsdf, weight);
    const detail::IntegrateArgs a =
        detail::make_integrate_args(g, depth.cview(), cases[c].camera, to_rigid(cases[c].pose));
    long long accepted = 0;
    for (int k = 0; k < g.nz; ++k)
      for (int j = 0; j < g.ny; ++j)
        for (int i = 0; i < g.nx; ++i) {
          float t = 0.0f;
          long long pixel = 0;
          const bool ok = detail::tsdf_sample(a, depth.data.data(), depth.width, i, j, k, t, pixel);
          const std::size_t v = static_cast<std::size_t>(g.index(i, j, k));
          ASSERT_EQ(weight[v], ok ? 1 : 0) << "case " << c << " voxel " << i << " " << j << " " << k;
          if (ok) ASSERT_EQ(tsdf[v], detail::tsdf_fuse(detail::Voxel{0, 0}, t, p.max_weight).tsdf);
          accepted += ok;
        }
    EXPECT_GT(accepted, 1000) << "case " << c;
  }
}

/// The CPU backend integrates 8 voxels at a time with AVX2 (integrate_lanes.hpp) and one at a time without: the
/// same voxels and colours bit for bit, frame after frame (running means, the weight caps), on a grid whose x
/// side is no multiple of 8 and a 128^3 one, with real frames at full size (with their colour) and half size.
TEST(VolumeIntegrateCpu, AvxLanesMatchTheScalarLoop) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  {  // the AVX2 variant below is the lanes, not the scalar loop again
    const s3d::test::ScopedCpuIsa scoped("avx2");
    VolumeParams tiny;
    tiny.resolution = {8, 8, 8};
    tiny.size = {0.4f, 0.4f, 0.4f};
    tiny.origin = {-0.2f, -0.2f, 0.3f};
    std::vector<detail::Voxel> voxels(512, detail::Voxel{0, 0});
    Image<float> depth(4, 4);
    std::fill(depth.data.begin(), depth.data.end(), 0.5f);
    const detail::IntegrateArgs a =
        detail::make_integrate_args(detail::make_grid(tiny), depth.cview(), {2.0f, 2.0f, 1.5f, 1.5f},
                                    detail::Rigid{{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}});
    ASSERT_EQ(detail::integrate_lanes_cpu(voxels.data(), nullptr, a, depth.data.data(), depth.width, nullptr, nullptr,
                                          nullptr),
              cpu_avx2_enabled());
  }
  VolumeParams odd = redkitchen_volume(64, 0.04f);
  odd.resolution = {101, 77, 93};
  odd.size = {3.0f, 2.5f, 2.8f};
  odd.max_weight = 3;
  odd.color = true;
  for (const VolumeParams& p : {odd, redkitchen_volume(128, 0.03f)}) {
    std::vector<std::int16_t> tsdf[2], weight[2];
    std::vector<std::uint8_t> colors[2];
    for (int variant = 0; variant < 2; ++variant) {
      const s3d::test::ScopedCpuIsa scoped(variant == 0 ? "avx2" : "baseline");
      TestVolume volume(Device(Device::Kind::kCpu), p);
      for (int f = 0; f <= 60; f += 10) {
        const Image<float> depth = s3d::test::read_redkitchen_depth(f);
        if (f % 20 == 0) {
          const Image<std::uint8_t> rgb = s3d::test::read_redkitchen_color(f);
          volume.integrate(depth, redkitchen_camera(), read_redkitchen_pose(f), p.color ? rgb.data.data() : nullptr);
        } else {  // every other pixel of every other row, the intrinsics halved
          Image<float> half(depth.width / 2, depth.height / 2);
          for (int y = 0; y < half.height; ++y)
            for (int x = 0; x < half.width; ++x) half.at(x, y) = depth.at(2 * x, 2 * y);
          volume.integrate(half, redkitchen_camera().level(1), read_redkitchen_pose(f));
        }
      }
      volume.download(tsdf[variant], weight[variant]);
      colors[variant] = volume.colors();
    }
    long long capped = 0, observed = 0, colored = 0;
    for (std::int16_t w : weight[1]) capped += w == p.max_weight, observed += w != 0;
    for (std::size_t v = 3; v < colors[1].size(); v += 4) colored += colors[1][v] != 0;
    EXPECT_GT(observed, 50000);
    if (p.max_weight == 3) EXPECT_GT(capped, 10000);
    if (p.color) EXPECT_GT(colored, 2000);
    ASSERT_TRUE(colors[0] == colors[1]) << "colours differ, " << p.resolution[0] << " voxels in x";
    ASSERT_EQ(tsdf[0].size(), tsdf[1].size());
    for (std::size_t v = 0; v < tsdf[0].size(); ++v) {
      ASSERT_EQ(weight[0][v], weight[1][v]) << "voxel " << v << ", " << p.resolution[0] << " voxels in x";
      ASSERT_EQ(tsdf[0][v], tsdf[1][v]) << "voxel " << v << ", " << p.resolution[0] << " voxels in x";
    }
  }
}

/// The voxels of the blocks IntegrateCulling culls, each checked against tsdf_sample (the per-voxel rule of both
/// backends); returns how many there were.
long long check_culled_voxels(const detail::VolumeGrid& g, const Image<float>& depth, const CameraIntrinsics& camera,
                              const Eigen::Isometry3d& pose) {
  const detail::IntegrateArgs a = detail::make_integrate_args(g, depth.cview(), camera, to_rigid(pose));
  detail::IntegrateCulling culling;
  culling.update(a, depth.data.data(), depth.width);
  long long culled = 0;
  for (int k = 0; k < g.nz; ++k)
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) {
        if (!culling.culled(i, j, k)) continue;
        ++culled;
        float tsdf = 0.0f;
        long long pixel = 0;
        if (detail::tsdf_sample(a, depth.data.data(), depth.width, i, j, k, tsdf, pixel)) {
          ADD_FAILURE() << "voxel " << i << "," << j << "," << k << " is culled but takes tsdf " << tsdf
                        << " from pixel " << pixel;
          return culled;
        }
      }
  return culled;
}

/// The integration passes over blocks the frame cannot change (integrate_culling.hpp): no voxel of a culled block
/// is one tsdf_sample would update, on real frames with the camera inside the grid (the default depth-grown
/// truncation and a constant one, a grid of 16^3 blocks and one with partial blocks) and on synthetic views from
/// outside it, one looking away; and on the real frames it culls a large share of the grid (else it buys nothing).
TEST(VolumeIntegrateCpu, CulledBlocksHoldNoVoxelTheFrameUpdates) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  VolumeParams constant = redkitchen_volume(128, 0.03f);
  constant.truncation_growth = 0.0f;
  VolumeParams odd = redkitchen_volume(64, 0.02f);
  odd.resolution = {101, 77, 93};
  for (const VolumeParams& p : {redkitchen_volume(128, 0.03f), constant, odd}) {
    const detail::VolumeGrid g = detail::make_grid(p);
    for (int f : {0, 150, 299}) {
      const long long culled =
          check_culled_voxels(g, s3d::test::read_redkitchen_depth(f), redkitchen_camera(), read_redkitchen_pose(f));
      EXPECT_GT(culled, g.count() / 4) << "frame " << f << ", " << p.resolution[0] << " voxels in x";
    }
  }
  VolumeParams small;
  small.resolution = {37, 41, 29};
  small.size = {0.74f, 0.82f, 0.58f};
  small.origin = {-0.37f, -0.41f, 0.71f};
  small.truncation = 0.05f;
  const Eigen::Vector3d centre(0.0, 0.0, 1.0);
  for (int f = 0; f < 4; ++f) {
    const Eigen::Vector3d eye = centre + Eigen::Vector3d(0.3 * std::cos(f * 1.3), 0.2 * std::sin(f * 1.3), -1.0);
    const Eigen::Isometry3d pose = look_at(eye, f == 3 ? centre + Eigen::Vector3d(0.0, 3.0, 0.0) : centre);
    check_culled_voxels(detail::make_grid(small), render_sphere(synthetic_camera(), pose, 631, 479, centre, 0.2),
                        synthetic_camera(), pose);
  }
}

/// The same without data: synthetic spheres into grids narrower than 8 columns, with a partial last group, and
/// one whose frames mostly miss it (whole groups of columns outside the frustum).
TEST(VolumeIntegrateCpu, AvxLanesMatchTheScalarLoopOnSmallGrids) {
  const Eigen::Vector3d centre(0.0, 0.0, 1.0);
  for (const std::array<int, 3>& resolution :
       {std::array<int, 3>{5, 9, 7}, std::array<int, 3>{1, 2, 3}, std::array<int, 3>{37, 41, 29}}) {
    VolumeParams p;
    p.resolution = resolution;
    p.size = {0.74f, 0.82f, 0.58f};
    p.origin = {-0.37f, -0.41f, 0.71f};
    p.truncation = 0.05f;
    p.max_weight = 2;
    std::vector<std::int16_t> tsdf[2], weight[2];
    for (int variant = 0; variant < 2; ++variant) {
      const s3d::test::ScopedCpuIsa scoped(variant == 0 ? "avx2" : "baseline");
      TestVolume volume(Device(Device::Kind::kCpu), p);
      for (int f = 0; f < 4; ++f) {
        const Eigen::Vector3d eye = centre + Eigen::Vector3d(0.3 * std::cos(f * 1.3), 0.2 * std::sin(f * 1.3), -1.0);
        const Eigen::Vector3d target = f == 3 ? centre + Eigen::Vector3d(0.0, 3.0, 0.0) : centre;  // looks away
        const Eigen::Isometry3d pose = look_at(eye, target);
        volume.integrate(render_sphere(synthetic_camera(), pose, 631, 479, centre, 0.2), synthetic_camera(), pose);
      }
      volume.download(tsdf[variant], weight[variant]);
    }
    long long observed = 0;
    for (std::int16_t w : weight[1]) observed += w != 0;
    if (resolution[0] > 1) EXPECT_GT(observed, 20) << resolution[0] << " voxels in x";  // the sphere's voxels
    EXPECT_EQ(tsdf[0], tsdf[1]) << resolution[0] << " voxels in x";
    EXPECT_EQ(weight[0], weight[1]) << resolution[0] << " voxels in x";
  }
}

TEST(VolumeParamsCheck, BadParamsThrowInvalidArgument) {
  VolumeParams p;
  p.resolution = {0, 4, 4};
  EXPECT_THROW(detail::make_cpu_volume(p), s3d::InvalidArgument);
  p = VolumeParams{};
  p.resolution = {4, 4, 4};
  p.truncation = 0.0f;
  EXPECT_THROW(detail::make_cpu_volume(p), s3d::InvalidArgument);
  p.truncation = 1e-9f;  // the ray cast's step would not advance t
  EXPECT_THROW(detail::make_cpu_volume(p), s3d::InvalidArgument);
  p.truncation = 0.03f;
  p.max_weight = 40000;
  EXPECT_THROW(detail::make_cpu_volume(p), s3d::InvalidArgument);
}

// ------------------------------------------------------------------------------------- CUDA against the CPU

/// 7-Scenes redkitchen: a 3 m cube from the first camera centre - (1.5, 1.5, 0.5), 128^3 (2.3 cm voxels).
VolumeParams real_params(int resolution = 128) { return redkitchen_volume(resolution, 0.06f); }

TEST_P(VolumeIntegrate, RealFramesMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  const VolumeParams p = real_params();
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (int f : {0, 20, 40, 60, 80}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Eigen::Isometry3d pose = read_redkitchen_pose(f);
    cpu.integrate(depth, redkitchen_camera(), pose);
    gpu.integrate(depth, redkitchen_camera(), pose);
  }
  std::vector<std::int16_t> t0, w0, t1, w1;
  cpu.download(t0, w0);
  gpu.download(t1, w1);
  long long observed = 0;
  for (std::int16_t w : w0) observed += w != 0;
  EXPECT_GT(observed, 100000);
  ASSERT_EQ(t0.size(), t1.size());
  for (std::size_t v = 0; v < t0.size(); ++v) {
    ASSERT_EQ(w0[v], w1[v]) << "voxel " << v;
    ASSERT_EQ(t0[v], t1[v]) << "voxel " << v;
  }
}

TEST_P(VolumeIntegrate, OddResolutionMatchesTheCpu) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  VolumeParams p;
  p.resolution = {37, 41, 29};
  p.size = {0.74f, 0.82f, 0.58f};
  p.origin = {-0.37f, -0.41f, 0.71f};
  p.truncation = 0.05f;
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  const Eigen::Vector3d centre(0.0, 0.0, 1.0);
  for (int f = 0; f < 4; ++f) {
    const Eigen::Isometry3d pose =
        look_at(centre + Eigen::Vector3d(0.3 * std::cos(f * 1.3), 0.2 * std::sin(f * 1.3), -1.0), centre);
    const Image<float> depth = render_sphere(synthetic_camera(), pose, 631, 479, centre, 0.2);
    cpu.integrate(depth, synthetic_camera(), pose);
    gpu.integrate(depth, synthetic_camera(), pose);
  }
  std::vector<std::int16_t> t0, w0, t1, w1;
  cpu.download(t0, w0);
  gpu.download(t1, w1);
  EXPECT_EQ(t0, t1);
  EXPECT_EQ(w0, w1);
}

Image<std::uint8_t> constant_color(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  Image<std::uint8_t> rgb(640, 480, 3);
  for (std::size_t p = 0; p < rgb.data.size(); p += 3) rgb.data[p] = r, rgb.data[p + 1] = g, rgb.data[p + 2] = b;
  return rgb;
}

TEST(ColorFuse, RoundedRunningMeanWithACappedWeight) {
  const std::uint8_t white[3] = {255, 255, 255}, mixed[3] = {100, 0, 51};
  detail::ColorVoxel c = detail::color_fuse({0, 0, 0, 0}, mixed, 128);
  EXPECT_EQ(c.r, 100);
  EXPECT_EQ(c.g, 0);
  EXPECT_EQ(c.b, 51);
  EXPECT_EQ(c.weight, 1);
  c = detail::color_fuse({200, 100, 50, 1}, mixed, 128);  // (200 + 100 + 1) / 2, (100 + 0 + 1) / 2, (50 + 51 + 1) / 2
  EXPECT_EQ(c.r, 150);
  EXPECT_EQ(c.g, 50);
  EXPECT_EQ(c.b, 51);
  EXPECT_EQ(c.weight, 2);
  c = detail::color_fuse({0, 0, 0, 3}, white, 3);  // at the cap: (0 * 3 + 255 + 2) / 4, weight stays 3
  EXPECT_EQ(c.r, 64);
  EXPECT_EQ(c.weight, 3);
  detail::ColorVoxel full{255, 255, 255, 255};
  for (int i = 0; i < 3; ++i) full = detail::color_fuse(full, white, 1000);  // the 8-bit cap, no overflow
  EXPECT_EQ(full.r, 255);
  EXPECT_EQ(full.weight, 255);
}

TEST_P(VolumeIntegrate, ColorIsTheMeanOfTheSamplesInsideTheBand) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  VolumeParams p = plane_params();
  p.color = true;
  TestVolume volume(GetParam(), p);
  const Image<std::uint8_t> first = constant_color(200, 100, 50), second = constant_color(100, 0, 51);
  volume.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity(), first.data.data());
  volume.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity(), second.data.data());
  volume.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity());  // no colour: kept
  std::vector<std::int16_t> tsdf, weight;
  volume.download(tsdf, weight);
  const std::vector<std::uint8_t> rgbw = volume.colors();
  ASSERT_EQ(rgbw.size(), 4 * tsdf.size());
  long long band = 0, free_space = 0;
  for (std::size_t v = 0; v < tsdf.size(); ++v) {
    const std::uint8_t* c = &rgbw[4 * v];
    if (weight[v] == 0) {
      ASSERT_EQ(c[3], 0) << "voxel " << v;
    } else if (tsdf[v] < 32767 - 2) {  // every sample had |sdf| < truncation
      ASSERT_EQ(c[0], 150) << "voxel " << v;
      ASSERT_EQ(c[1], 50) << "voxel " << v;
      ASSERT_EQ(c[2], 51) << "voxel " << v;
      ASSERT_EQ(c[3], 2) << "voxel " << v;
      ++band;
    } else if (tsdf[v] == 32767 && c[3] == 0) {
      ++free_space;  // sdf beyond the truncation: no colour
    }
  }
  EXPECT_GT(band, 80 * 60 * 5);
  EXPECT_GT(free_space, 80 * 60 * 10);
  // A volume without colour ignores the image.
  TestVolume plain(GetParam(), plane_params());
  plain.integrate(constant_depth(1.0f), synthetic_camera(), Eigen::Isometry3d::Identity(), first.data.data());
  EXPECT_TRUE(plain.colors().empty());
}

TEST_P(VolumeIntegrate, RealColorFramesMatchTheCpuBitForBit) {
  S3D_SKIP_IF_NO_DEVICE(GetParam());
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299");
  VolumeParams p = real_params();
  p.color = true;
  TestVolume cpu(Device(Device::Kind::kCpu), p), gpu(GetParam(), p);
  for (int f : {0, 25, 50}) {
    const Image<float> depth = s3d::test::read_redkitchen_depth(f);
    const Image<std::uint8_t> rgb = s3d::test::read_redkitchen_color(f);
    ASSERT_EQ(rgb.width, depth.width);
    ASSERT_EQ(rgb.height, depth.height);
    const Eigen::Isometry3d pose = read_redkitchen_pose(f);
    cpu.integrate(depth, redkitchen_camera(), pose, rgb.data.data());
    gpu.integrate(depth, redkitchen_camera(), pose, rgb.data.data());
  }
  const std::vector<std::uint8_t> c0 = cpu.colors(), c1 = gpu.colors();
  long long colored = 0;
  for (std::size_t v = 3; v < c0.size(); v += 4) colored += c0[v] != 0;
  EXPECT_GT(colored, 10000);
  ASSERT_EQ(c0.size(), c1.size());
  for (std::size_t i = 0; i < c0.size(); ++i) ASSERT_EQ(c0[i], c1[i]) << "voxel " << i / 4 << " channel " << i % 4;
}

INSTANTIATE_TEST_SUITE_P(Devices, VolumeIntegrate, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion::test
