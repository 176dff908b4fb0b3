// Tracking stages: CPU reference checks that can fail (formulas written here), and every stage of the CUDA
// backend bit-identical to the CPU oracle on real 7-Scenes frames, odd sizes and all-invalid frames.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>

#include "s3d/core/device.hpp"
#include "test_support.hpp"
#include "tracking_common.hpp"
#include "tracking_cpu.hpp"
#include "tracking_fixtures.hpp"
#include "tracking_math.hpp"

namespace s3d::fusion {
namespace {

using detail::Vec3f;
using test::make_tracking;
using test::same_bits;

Image<float> noisy_crop(const Image<float>& src, int w, int h, unsigned seed) {
  Image<float> out(w, h);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float d = src.at(x % src.width, y % src.height);
      const float r = u(rng);
      if (r < 0.01f) d = std::numeric_limits<float>::quiet_NaN();
      if (r > 0.99f) d = std::numeric_limits<float>::infinity();
      if (d > 0.0f && d == d) d += 0.002f * (u(rng) - 0.5f);
      out.at(x, y) = d;
    }
  return out;
}

/// The number of valid normals of a level, counted here.
std::int64_t valid_normals(const detail::HostMaps& m) {
  std::int64_t n = 0;
  for (const Vec3f& v : m.normals) n += detail::is_valid(v);
  return n;
}

// ---- CPU reference checks -------------------------------------------------------------------------------

TEST(TrackingCpu, IcpAttemptConvergesOnRealFrames) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.depth.png");
  const FusionParams p = test::redkitchen_params();
  const Image<float> d0 = s3d::test::read_redkitchen_depth(0), d8 = s3d::test::read_redkitchen_depth(8);
  auto t = detail::make_cpu_tracking(p, d0.width, d0.height);
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0);
  t->preprocess(d0.cview());
  t->reference_from_frame(test::to_rigid(p0));
  t->preprocess(d8.cview());
  const detail::IcpPose start = test::to_icp_pose(p0);
  const detail::IcpState first = t->run_icp({start, test::to_rigid(p0.inverse()), detail::IcpGates{}});
  const detail::IcpState again = t->run_icp({first.pose, test::to_rigid(p0.inverse()), detail::IcpGates{}});
  ASSERT_EQ(first.stop, detail::kIcpRunning);
  ASSERT_EQ(again.stop, detail::kIcpRunning);
  const auto step = [](const detail::IcpPose& a, const detail::IcpPose& b) {
    return std::hypot(a.t[0] - b.t[0], a.t[1] - b.t[1], a.t[2] - b.t[2]);
  };
  // Eight frames of hand-held motion are millimetres; started again at its result, ICP stays put.
  EXPECT_GT(step(first.pose, start), 1e-3);
  EXPECT_LT(step(again.pose, first.pose), 0.1 * step(first.pose, start));
  EXPECT_GT(first.inliers, 100000);
}

TEST(TrackingCpu, ExpNegIsCloseToLibm) {
  for (float x = -80.0f; x <= 0.0f; x += 0.01f) {
    const double ref = std::exp(static_cast<double>(x));
    EXPECT_NEAR(detail::exp_neg(x), ref, 4e-7 * ref) << x;
  }
  EXPECT_EQ(detail::exp_neg(0.0f), 1.0f);
  EXPECT_EQ(detail::exp_neg(-200.0f), 0.0f);
  EXPECT_EQ(detail::exp_neg(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

TEST(TrackingCpu, MaskRejectsInvalidValues) {
  FusionParams p = test::redkitchen_params();
  p.depth.min_depth = 0.5f;
  p.depth.max_depth = 4.0f;
  p.depth.levels = 1;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Image<float> d(8, 1);
  d.data = {0.0f, nan, inf, -inf, -1.0f, 0.5f, 4.0f, 4.5f};
  auto t = detail::make_cpu_tracking(p, 8, 1);
  EXPECT_EQ(t->preprocess(d.cview()), 1);  // only 4.0 (<= max_depth) survives; 0.5 is <= min_depth
  const ImageView<const float> raw = t->raw_depth();
  for (int x = 0; x < 8; ++x) EXPECT_EQ(raw(x, 0), x == 6 ? 4.0f : 0.0f) << x;
}

TEST(TrackingCpu, VertexMapIsTheBackProjectionAndNormalsFaceTheCamera) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000000.depth.png");
  const Image<float> depth = s3d::test::read_redkitchen_depth(0);
  FusionParams p = test::redkitchen_params();
  p.depth.bilateral = false;
  auto t = detail::make_cpu_tracking(p, depth.width, depth.height);
  t->preprocess(depth.cview());
  for (int level = 0; level < p.depth.levels; ++level) {
    const detail::HostMaps m = t->download_frame_maps(level);
    const std::vector<float> d = t->download_filtered_depth(level);
    const CameraIntrinsics c = p.camera.level(level);
    ASSERT_EQ(m.width, depth.width >> level);
    std::int64_t facing = 0, valid = 0;
    for (int y = 0; y < m.height; ++y)
      for (int x = 0; x < m.width; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * m.width + x;
        const Vec3f v = m.vertices[i];
        if (d[i] == 0.0f) {
          ASSERT_FALSE(detail::is_valid(v));
          continue;
        }
        const float ex = ((static_cast<float>(x) - c.cx) * d[i]) / c.fx;
        const float ey = ((static_cast<float>(y) - c.cy) * d[i]) / c.fy;
        ASSERT_EQ(v.x, ex) << x << "," << y;
        ASSERT_EQ(v.y, ey);
        ASSERT_EQ(v.z, d[i]);
        const Vec3f n = m.normals[i];
        if (!detail::is_valid(n)) continue;
        ++valid;
        ASSERT_NEAR(detail::squared_norm(n), 1.0f, 1e-5f);
        facing += detail::dot(n, v) < 0.0f;
      }
    EXPECT_GT(valid, m.width * m.height / 2);
    EXPECT_EQ(facing, valid) << "every normal faces the camera (n . v < 0)";
  }
}

TEST(TrackingCpu, LevelZeroDepthWithoutFilterIsTheMaskedInput) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000000.depth.png");
  const Image<float> depth = s3d::test::read_redkitchen_depth(0);
  FusionParams p = test::redkitchen_params();
  p.depth.bilateral = false;
  auto t = detail::make_cpu_tracking(p, depth.width, depth.height);
  t->preprocess(depth.cview());
  EXPECT_EQ(t->download_filtered_depth(0), depth.data);
}

TEST(TrackingCpu, SelfAssociationTakesEveryValidNormalWithZeroGradient) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000000.depth.png");
  const Image<float> depth = s3d::test::read_redkitchen_depth(0);
  const FusionParams p = test::redkitchen_params();
  auto t = detail::make_cpu_tracking(p, depth.width, depth.height);
  t->preprocess(depth.cview());
  const Eigen::Isometry3d pose = test::read_redkitchen_pose(0);
  t->reference_from_frame(test::to_rigid(pose));
  for (int level = 0; level < p.depth.levels; ++level) {
    const detail::IcpSystem s = t->build_system(level, test::to_rigid(pose), test::to_rigid(pose.inverse()),
                                                p.camera.level(level), detail::IcpGates{});
    const std::int64_t normals = valid_normals(t->download_frame_maps(level));
    // Float round trips of the pose may move a point by ~1e-7 m, never across a pixel.
    EXPECT_EQ(s.inliers, normals) << "level " << level;
    double a_trace = s.a[0] + s.a[6] + s.a[11] + s.a[15] + s.a[18] + s.a[20];
    for (int k = 0; k < 6; ++k) EXPECT_LT(std::fabs(s.g[k]), 1e-6 * a_trace) << "g[" << k << "] level " << level;
    EXPECT_LT(s.residual_sq, 1e-9 * static_cast<double>(normals));
  }
}

TEST(TrackingCpu, IdentityPoseSystemIsExactlyZeroGradient) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000000.depth.png");
  const Image<float> depth = s3d::test::read_redkitchen_depth(0);
  const FusionParams p = test::redkitchen_params();
  auto t = detail::make_cpu_tracking(p, depth.width, depth.height);
  t->preprocess(depth.cview());
  const detail::Rigid id = test::to_rigid(Eigen::Isometry3d::Identity());
  t->reference_from_frame(id);
  const detail::IcpSystem s = t->build_system(0, id, id, p.camera, detail::IcpGates{});
  EXPECT_EQ(s.inliers, valid_normals(t->download_frame_maps(0)));
  for (int k = 0; k < 6; ++k) EXPECT_EQ(s.g[k], 0.0);
  EXPECT_EQ(s.residual_sq, 0.0);
}

/// Frame 5 (current) against frame 0 (reference, at its ground-truth pose p0), both pre-processed on the CPU.
struct Frame5AgainstFrame0 {
  FusionParams p = test::redkitchen_params();
  Eigen::Isometry3d p0 = test::read_redkitchen_pose(0);
  std::unique_ptr<detail::TrackingBackend> ref, cur;
  Frame5AgainstFrame0() {
    const Image<float> d0 = s3d::test::read_redkitchen_depth(0), d5 = s3d::test::read_redkitchen_depth(5);
    ref = detail::make_cpu_tracking(p, d0.width, d0.height);
    cur = detail::make_cpu_tracking(p, d0.width, d0.height);
    ref->preprocess(d0.cview());
    cur->preprocess(d5.cview());
    ref->reference_from_frame(test::to_rigid(p0));
  }
  /// The ICP inputs of `level` at `estimate` (default p0; frame 5 is about 1 cm and 0.5 degrees from it).
  detail::IcpInputs inputs(int level, const detail::IcpGates& gates) const { return inputs(level, gates, p0); }
  detail::IcpInputs inputs(int level, const detail::IcpGates& gates, const Eigen::Isometry3d& estimate) const {
    return detail::make_icp_inputs(cur->frame_maps(level), ref->reference_maps(level), test::to_rigid(estimate),
                                   test::to_rigid(p0.inverse()), p.camera.level(level), gates, level);
  }
};

TEST(TrackingCpu, ReductionTreeAgreesWithAPlainDoubleSum) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000005.depth.png");
  const Frame5AgainstFrame0 f;
  const detail::IcpInputs in = f.inputs(0, detail::IcpGates{});
  double plain[detail::kIcpTerms] = {};
  for (int i = 0; i < in.cur_pixels; ++i) {
    float acc[detail::kIcpTerms] = {};
    detail::icp_pixel(in, i, acc);
    for (int k = 0; k < detail::kIcpTerms; ++k) plain[k] += acc[k];
  }
  double tree[detail::kIcpTerms];
  detail::icp_reduce_cpu(in, tree);
  ASSERT_GT(plain[28], 1000.0);
  for (int k = 0; k < detail::kIcpTerms; ++k)
    EXPECT_NEAR(tree[k], plain[k], 1e-5 * std::fabs(plain[k]) + 1e-9) << "term " << k;
}

// The weighted system against the unweighted rows scaled in double by the noise model written out here: A
// and g are sums of (1.2 mm)^2 / (sigma(z)^2 + sigma_model^2) times each unweighted row, z the current point's
// depth, sigma(z) = 1.2 mm + 1.9 mm/m^2 (z - 0.4 m)^2 (flat below 0.4 m); the residual and the inlier count
// stay unweighted.
TEST(TrackingCpu, NoiseWeightingScalesEachRowByTheInverseResidualVariance) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000005.depth.png");
  const Frame5AgainstFrame0 f;
  detail::IcpGates plain_gates;
  plain_gates.noise_weighting = false;
  // At the reference's pose and moved off it: the weight must follow the current point's own depth, not the
  // depth it projects to in the reference.
  Eigen::Isometry3d off = f.p0;
  off.translation() += Eigen::Vector3d(0.03, -0.02, 0.05);
  off.linear() = off.linear() * Eigen::AngleAxisd(0.04, Eigen::Vector3d(0.3, 1, 0.2).normalized()).toRotationMatrix();
  for (const Eigen::Isometry3d& estimate : {f.p0, off})
    for (const float model_sigma : {0.0f, 0.0017f, 0.01f})
      for (int l = 0; l < f.p.depth.levels; ++l) {
        detail::IcpGates weighted;
        weighted.model_sigma = model_sigma;
        const detail::Maps cm = f.cur->frame_maps(l);
        const detail::IcpInputs plain_in = f.inputs(l, plain_gates, estimate);
        double expected[detail::kIcpTerms] = {};
        double depth_min = 1e9, depth_max = 0.0;
        for (int i = 0; i < plain_in.cur_pixels; ++i) {
          float acc[detail::kIcpTerms] = {};
          detail::icp_pixel(plain_in, i, acc);
          if (acc[28] == 0.0f) continue;
          const double z = cm.vertices[i].z, dz = std::max(0.0, z - 0.4), sigma = 0.0012 + 0.0019 * dz * dz;
          const double w = (0.0012 * 0.0012) / (sigma * sigma + double(model_sigma) * double(model_sigma));
          for (int k = 0; k < 27; ++k) expected[k] += w * acc[k];
          expected[27] += acc[27];
          expected[28] += acc[28];
          depth_min = std::min(depth_min, z), depth_max = std::max(depth_max, z);
        }
        double got[detail::kIcpTerms], unweighted[detail::kIcpTerms];
        detail::icp_reduce_cpu(f.inputs(l, weighted, estimate), got);
        detail::icp_reduce_cpu(plain_in, unweighted);
        ASSERT_GT(expected[28], 100.0) << "level " << l;
        ASSERT_GT(depth_max - depth_min, 1.0) << "level " << l << ": the frame should span depths of different weights";
        EXPECT_LT(got[0], 0.5 * unweighted[0]) << "level " << l << ": the rows are not weighted";
        for (int k = 0; k < detail::kIcpTerms; ++k)
          EXPECT_NEAR(got[k], expected[k], 1e-4 * std::fabs(expected[k]) + 1e-9)
              << "model sigma " << model_sigma << " level " << l << " term " << k;
      }
}

TEST(TrackingCpu, DepthNoiseWeightIsTheInverseVarianceOfTheKinectModel) {
  EXPECT_EQ(detail::depth_noise_weight(0.4f, 0.0f), 1.0f);
  EXPECT_EQ(detail::depth_noise_weight(0.1f, 0.0f), 1.0f);  // flat below 0.4 m, where the model's fit ends
  EXPECT_EQ(detail::depth_noise_weight(0.0f, 0.0f), 1.0f);
  for (float z : {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.5f, 8.0f}) {
    const double s = 0.0012 + 0.0019 * (z - 0.4) * (z - 0.4);
    EXPECT_NEAR(detail::depth_noise_weight(z, 0.0f), (0.0012 / s) * (0.0012 / s), 1e-6 * (0.0012 / s) * (0.0012 / s))
        << "z " << z;
  }
  EXPECT_LT(detail::depth_noise_weight(3.0f, 0.0f), detail::depth_noise_weight(2.9f, 0.0f));
  // A model variance caps the weight of near points: (1.2 mm)^2 / ((1.2 mm)^2 + (1.2 mm)^2) at 0.4 m.
  EXPECT_EQ(detail::depth_noise_weight(0.4f, 0.0012f * 0.0012f), 0.5f);
}

TEST(TrackingCpu, OddAndTinySizesHaveFloorHalvedLevels) {
  for (auto [w, h] : {std::pair{641, 479}, std::pair{8, 6}, std::pair{3, 2}}) {
    FusionParams p = test::redkitchen_params();
    auto t = detail::make_cpu_tracking(p, w, h);
    Image<float> d(w, h, 1, 1.5f);
    EXPECT_EQ(t->preprocess(d.cview()), std::int64_t(w) * h);
    for (int l = 0; l < p.depth.levels; ++l) {
      EXPECT_EQ(t->download_frame_maps(l).width, w >> l);
      EXPECT_EQ(t->download_filtered_depth(l).size(), std::size_t(w >> l) * std::size_t(h >> l));
    }
  }
}

// ---- every device: CUDA equals the CPU oracle, bit for bit ------------------------------------------------

class TrackingDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }

  /// CPU and device trackers with redkitchen frame 0 as the reference (at its ground-truth pose) and frame 8
  /// as the current frame.
  std::pair<std::unique_ptr<detail::TrackingBackend>, std::unique_ptr<detail::TrackingBackend>> frame8_against_frame0(
      const FusionParams& p) {
    const Image<float> d0 = s3d::test::read_redkitchen_depth(0), d8 = s3d::test::read_redkitchen_depth(8);
    auto cpu = detail::make_cpu_tracking(p, d0.width, d0.height);
    auto dev = make_tracking(GetParam(), p, d0.width, d0.height);
    for (auto* t : {cpu.get(), dev.get()}) {
      t->preprocess(d0.cview());
      t->reference_from_frame(test::to_rigid(test::read_redkitchen_pose(0)));
      t->preprocess(d8.cview());
    }
    return {std::move(cpu), std::move(dev)};
  }

  /// Preprocesses `depth` on the CPU and on the device and compares every level.
  void expect_same_preprocessing(const FusionParams& p, const Image<float>& depth) {
    auto cpu = detail::make_cpu_tracking(p, depth.width, depth.height);
    auto dev = make_tracking(GetParam(), p, depth.width, depth.height);
    EXPECT_EQ(dev->preprocess(depth.cview()), cpu->preprocess(depth.cview()));
    for (int l = 0; l < p.depth.levels; ++l) {
      EXPECT_EQ(test::first_difference(dev->download_filtered_depth(l), cpu->download_filtered_depth(l)), -1)
          << "filtered depth, level " << l << ", " << depth.width << "x" << depth.height;
      const detail::HostMaps a = dev->download_frame_maps(l), b = cpu->download_frame_maps(l);
      EXPECT_EQ(test::first_difference(a.vertices, b.vertices), -1) << "vertices, level " << l;
      EXPECT_EQ(test::first_difference(a.normals, b.normals), -1) << "normals, level " << l;
    }
  }
};

TEST_P(TrackingDeviceTest, PreprocessingMatchesCpuOnRealFrames) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000010.depth.png");
  FusionParams p = test::redkitchen_params();
  for (int frame : {0, 10}) expect_same_preprocessing(p, s3d::test::read_redkitchen_depth(frame));
  p.depth.levels = 4;
  p.depth.min_depth = 0.8f;
  p.depth.max_depth = 3.0f;
  p.depth.bilateral_radius = 3;
  expect_same_preprocessing(p, s3d::test::read_redkitchen_depth(5));
}

TEST_P(TrackingDeviceTest, PreprocessingMatchesCpuOnOddSizes) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000000.depth.png");
  const Image<float> real = s3d::test::read_redkitchen_depth(0);
  const FusionParams p = test::redkitchen_params();
  for (auto [w, h] : {std::pair{641, 479}, std::pair{8, 6}, std::pair{1, 1}, std::pair{33, 17}})
    expect_same_preprocessing(p, noisy_crop(real, w, h, 7u + unsigned(w)));
}

TEST_P(TrackingDeviceTest, AllInvalidFrameHasNoValidPixelOrCorrespondence) {
  const FusionParams p = test::redkitchen_params();
  auto t = make_tracking(GetParam(), p, 64, 48);
  Image<float> zeros(64, 48, 1, 0.0f);
  EXPECT_EQ(t->preprocess(zeros.cview()), 0);
  const detail::Rigid id = test::to_rigid(Eigen::Isometry3d::Identity());
  t->reference_from_frame(id);
  for (int l = 0; l < p.depth.levels; ++l) {
    const detail::HostMaps m = t->download_frame_maps(l);
    EXPECT_EQ(valid_normals(m), 0);
    const detail::IcpSystem s = t->build_system(l, id, id, p.camera.level(l), detail::IcpGates{});
    EXPECT_EQ(s.inliers, 0);
    EXPECT_EQ(s.residual_sq, 0.0);
  }
}

TEST_P(TrackingDeviceTest, IcpSystemMatchesCpuAtSeveralPoses) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.depth.png");
  const FusionParams p = test::redkitchen_params();
  auto [cpu, dev] = frame8_against_frame0(p);
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0), p8 = test::read_redkitchen_pose(8);
  std::vector<Eigen::Isometry3d> estimates{p0, p8};
  Eigen::Isometry3d off = p8;
  off.translation() += Eigen::Vector3d(0.02, -0.01, 0.015);
  off.linear() = off.linear() * Eigen::AngleAxisd(0.03, Eigen::Vector3d(0.2, 1, 0.1).normalized()).toRotationMatrix();
  estimates.push_back(off);
  for (const detail::IcpGates& g : test::icp_gate_variants())
    for (std::size_t e = 0; e < estimates.size(); ++e)
      for (int l = 0; l < p.depth.levels; ++l) {
        const auto est = test::to_rigid(estimates[e]), w2r = test::to_rigid(p0.inverse());
        const detail::IcpSystem a = dev->build_system(l, est, w2r, p.camera.level(l), g);
        const detail::IcpSystem b = cpu->build_system(l, est, w2r, p.camera.level(l), g);
        EXPECT_GT(b.inliers, 100) << "estimate " << e << " level " << l;
        EXPECT_TRUE(test::same_system(a, b))
            << "estimate " << e << " level " << l << " huber " << g.huber_delta << " noise weighting "
            << g.noise_weighting << " model sigma " << g.model_sigma << ": inliers " << a.inliers << " vs " << b.inliers
            << ", A00 " << a.a[0] << " vs " << b.a[0] << ", g0 " << a.g[0] << " vs " << b.g[0];
      }
}

TEST_P(TrackingDeviceTest, IcpAttemptOnTheDeviceMatchesCpu) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.depth.png");
  auto [cpu, dev] = frame8_against_frame0(test::redkitchen_params());
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0);
  for (const detail::IcpGates& g : test::icp_gate_variants()) {
    const detail::IcpRequest request{test::to_icp_pose(p0), test::to_rigid(p0.inverse()), g};
    const detail::IcpState a = dev->run_icp(request), b = cpu->run_icp(request);
    EXPECT_EQ(b.stop, detail::kIcpRunning);
    EXPECT_EQ(b.iterations, 19);
    EXPECT_TRUE(test::same_state(a, b)) << "huber " << g.huber_delta << " noise weighting " << g.noise_weighting
                                        << ": t " << a.pose.t[0] << " vs " << b.pose.t[0] << ", iterations "
                                        << a.iterations << " vs " << b.iterations;
  }
  // Gates that reject everything: level 2 and 1 are given up, level 0 stops the attempt, on both.
  detail::IcpGates closed;
  closed.distance = 0.0f;
  const detail::IcpRequest request{test::to_icp_pose(p0), test::to_rigid(p0.inverse()), closed};
  const detail::IcpState a = dev->run_icp(request), b = cpu->run_icp(request);
  EXPECT_EQ(b.stop, detail::kIcpTooFewCorrespondences);
  EXPECT_EQ(b.stop_level, 0);
  EXPECT_EQ(b.iterations, 3);
  EXPECT_TRUE(test::same_state(a, b));
}

TEST_P(TrackingDeviceTest, PhotometricSystemsAndAttemptsMatchCpu) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000008.color.jpg");
  FusionParams p = test::redkitchen_params();
  p.icp.photometric_sigma = 0.02f;
  const Image<float> d0 = s3d::test::read_redkitchen_depth(0), d8 = s3d::test::read_redkitchen_depth(8);
  const Eigen::Isometry3d p0 = test::read_redkitchen_pose(0), p8 = test::read_redkitchen_pose(8);
  auto cpu = detail::make_cpu_tracking(p, d0.width, d0.height);
  auto dev = make_tracking(GetParam(), p, d0.width, d0.height);
  for (auto* t : {cpu.get(), dev.get()}) {
    t->preprocess(d0.cview());
    t->preprocess_grey(test::redkitchen_grey(0, d0.width, d0.height).data());
    t->reference_from_frame(test::to_rigid(p0));
    t->keep_reference_grey();
    t->preprocess(d8.cview());
    t->preprocess_grey(test::redkitchen_grey(8, d0.width, d0.height).data());
  }
  for (int l = 0; l < p.depth.levels; ++l)
    EXPECT_EQ(test::first_difference(dev->download_reference_grey(l), cpu->download_reference_grey(l)), -1)
        << "grey level " << l;
  for (const float weight : test::photometric_weight_variants()) {
    detail::IcpGates g;
    g.photometric_weight = weight;
    for (int l = 0; l < p.depth.levels; ++l) {
      const auto est = test::to_rigid(p8), w2r = test::to_rigid(p0.inverse());
      const detail::IcpSystem a = dev->build_system(l, est, w2r, p.camera.level(l), g);
      const detail::IcpSystem b = cpu->build_system(l, est, w2r, p.camera.level(l), g);
      EXPECT_GT(b.inliers, 100) << "level " << l;
      EXPECT_TRUE(test::same_system(a, b)) << "level " << l << " weight " << weight << ": A00 " << a.a[0] << " vs "
                                           << b.a[0] << ", g3 " << a.g[3] << " vs " << b.g[3];
    }
    const detail::IcpRequest request{test::to_icp_pose(p0), test::to_rigid(p0.inverse()), g};
    const detail::IcpState a = dev->run_icp(request), b = cpu->run_icp(request);
    EXPECT_EQ(b.stop, detail::kIcpRunning);
    EXPECT_TRUE(test::same_state(a, b)) << "weight " << weight << ": t " << a.pose.t[0] << " vs " << b.pose.t[0];
  }
}

TEST_P(TrackingDeviceTest, ReferenceMapsMatchCpu) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000003.depth.png");
  const FusionParams p = test::redkitchen_params();
  const Image<float> d = s3d::test::read_redkitchen_depth(3);
  auto cpu = detail::make_cpu_tracking(p, d.width, d.height);
  auto dev = make_tracking(GetParam(), p, d.width, d.height);
  const detail::Rigid pose = test::to_rigid(test::read_redkitchen_pose(3));
  for (auto* t : {cpu.get(), dev.get()}) {
    t->preprocess(d.cview());
    t->reference_from_frame(pose);
  }
  for (int l = 0; l < p.depth.levels; ++l) {
    const detail::HostMaps a = dev->download_reference_maps(l), b = cpu->download_reference_maps(l);
    EXPECT_EQ(test::first_difference(a.vertices, b.vertices), -1) << "from frame, level " << l;
    EXPECT_EQ(test::first_difference(a.normals, b.normals), -1) << "from frame, level " << l;
  }
  for (auto* t : {cpu.get(), dev.get()}) t->reference_pyramid_from_level0();
  for (int l = 1; l < p.depth.levels; ++l) {
    const detail::HostMaps a = dev->download_reference_maps(l), b = cpu->download_reference_maps(l);
    EXPECT_EQ(test::first_difference(a.vertices, b.vertices), -1) << "halved, level " << l;
    EXPECT_EQ(test::first_difference(a.normals, b.normals), -1) << "halved, level " << l;
    EXPECT_GT(valid_normals(b), b.width * b.height / 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, TrackingDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion
