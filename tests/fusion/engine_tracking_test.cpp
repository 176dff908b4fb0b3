// FusionEngine tracking on every device: analytic box scenes with a known camera motion recovered in
// frame-to-frame and frame-to-model mode, a single wall flagged as degenerate, run-to-run and CPU-CUDA
// identity on real frames, invalid frames and wrong sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "s3d/core/errors.hpp"
#include "s3d/fusion/fusion_engine.hpp"
#include "test_support.hpp"
#include "tracking_fixtures.hpp"

namespace s3d::fusion {
namespace {

using test::Box;

/// A room 2 m wide seen from inside, with two boxes: the side walls, floor and ceiling fill wide strips of
/// the image, so every rigid motion is well observable (a wider room, whose side walls show only at the
/// image border, leaves sliding along x weakly constrained: condition ~3e4 and centimetres of drift).
struct BoxScene {
  Box room{{-1.0, -0.8, -0.5}, {1.0, 0.8, 3.0}};
  std::vector<Box> boxes{{{-0.6, 0.2, 1.5}, {-0.1, 0.8, 2.0}}, {{0.3, -0.4, 2.0}, {0.8, 0.1, 2.6}}};
};

/// Camera poses: a start pose and a constant per-frame motion (1.2 cm, 0.6 degrees).
std::vector<Eigen::Isometry3d> smooth_trajectory(const Eigen::Isometry3d& start, int frames) {
  Eigen::Isometry3d step = Eigen::Isometry3d::Identity();
  step.linear() = Eigen::AngleAxisd(0.6 * M_PI / 180.0, Eigen::Vector3d(0.3, 1.0, 0.2).normalized()).toRotationMatrix();
  step.translation() = Eigen::Vector3d(0.008, -0.004, 0.008);
  std::vector<Eigen::Isometry3d> poses{start};
  for (int i = 1; i < frames; ++i) poses.push_back(poses.back() * step);
  return poses;
}

double translation_error_m(const Eigen::Isometry3d& a, const Eigen::Isometry3d& b) {
  return (a.translation() - b.translation()).norm();
}
double rotation_error_deg(const Eigen::Isometry3d& a, const Eigen::Isometry3d& b) {
  return Eigen::AngleAxisd(a.linear().transpose() * b.linear()).angle() * 180.0 / M_PI;
}

FusionParams synthetic_params(TrackingMode mode) {
  FusionParams p;
  p.camera = {262.5f, 262.5f, 159.5f, 119.5f};  // 320 x 240
  p.mode = mode;
  p.integrate = mode == TrackingMode::kFrameToModel;
  p.depth.bilateral = false;  // noiseless depth: the filter would only round the room's corners
  p.initial_pose = Eigen::Isometry3d::Identity();
  p.initial_pose.translation() = Eigen::Vector3d(0.1, 0.05, 0.2);
  return p;
}

class EngineDeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }

  void expect_recovers_motion(const FusionParams& p, int frames, double max_residual_m) {
    const BoxScene scene;
    const int w = 320, h = 240;
    const auto truth = smooth_trajectory(p.initial_pose, frames);
    FusionEngine engine(GetParam(), p, w, h);
    for (int i = 0; i < frames; ++i) {
      const Image<float> depth = test::render_boxes(p.camera, w, h, truth[i], &scene.room, scene.boxes);
      const FrameResult r = engine.process(depth.cview());
      ASSERT_EQ(r.status, i == 0 ? FrameStatus::kFirst : FrameStatus::kTracked) << "frame " << i << ": " << r.reason;
      EXPECT_LT(translation_error_m(r.pose, truth[i]), 1e-3) << "frame " << i;
      EXPECT_LT(rotation_error_deg(r.pose, truth[i]), 0.05) << "frame " << i;
      if (i > 0) {
        EXPECT_GT(r.inlier_ratio, 0.8) << "frame " << i;
        EXPECT_LT(r.residual, max_residual_m) << "frame " << i;
        EXPECT_LT(r.condition, 1e4);
        EXPECT_EQ(r.iterations, 19);
      }
    }
  }
};

TEST_P(EngineDeviceTest, SyntheticRoomFrameToFrameRecoversTheMotion) {
  FusionParams p = synthetic_params(TrackingMode::kFrameToFrame);
  expect_recovers_motion(p, 6, 1e-3);
  p.icp.noise_weighting = false;
  expect_recovers_motion(p, 6, 1e-3);
}

// Needs the TSDF volume backend (integration and ray casting).
TEST_P(EngineDeviceTest, SyntheticRoomFrameToModelRecoversTheMotion) {
  FusionParams p = synthetic_params(TrackingMode::kFrameToModel);
  p.volume.resolution = {256, 256, 256};
  p.volume.size = {3.2f, 3.2f, 3.2f};
  p.volume.origin = {-1.6f, -1.6f, -0.1f};
  p.volume.truncation = 0.04f;
  // The ray-cast model (12.5 mm voxels) rounds the room's corners: residuals of 1-1.5 mm, poses still exact.
  expect_recovers_motion(p, GetParam().is_cpu() ? 4 : 8, 3e-3);
  p.icp.noise_weighting = false;  // KinFu's unweighted rows
  expect_recovers_motion(p, GetParam().is_cpu() ? 4 : 8, 3e-3);
}

TEST_P(EngineDeviceTest, SingleWallIsFlaggedNotFollowed) {
  FusionParams p = synthetic_params(TrackingMode::kFrameToFrame);
  const Box wall{{-50.0, -50.0, 1.5}, {50.0, 50.0, 2.0}};
  FusionEngine engine(GetParam(), p, 320, 240);
  Eigen::Isometry3d pose = p.initial_pose;
  for (int i = 0; i < 3; ++i) {
    const Image<float> depth = test::render_boxes(p.camera, 320, 240, pose, nullptr, {wall});
    const FrameResult r = engine.process(depth.cview());
    if (i == 0) {
      EXPECT_EQ(r.status, FrameStatus::kFirst);
    } else {
      EXPECT_EQ(r.status, FrameStatus::kLost) << "sliding along a wall is unobservable";
      EXPECT_GT(r.condition, p.icp.max_condition);
      EXPECT_NE(r.reason.find("condition"), std::string::npos) << r.reason;
      EXPECT_TRUE(r.pose.matrix().allFinite());
      EXPECT_TRUE(r.pose.isApprox(p.initial_pose)) << "the last good pose is kept";
    }
    pose.translation().x() += 0.01;
  }
}

TEST_P(EngineDeviceTest, FrameToFrameTracksOnAfterALostFrame) {
  const FusionParams p = synthetic_params(TrackingMode::kFrameToFrame);
  const BoxScene scene;
  const auto truth = smooth_trajectory(p.initial_pose, 5);
  // Frame 0 has depth only in columns >= 200, the later frames only in columns < 160: frame 1 overlaps
  // nothing of frame 0 (lost), and neither would any later frame.
  FusionEngine engine(GetParam(), p, 320, 240);
  std::vector<FrameResult> r;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    Image<float> depth = test::render_boxes(p.camera, 320, 240, truth[i], &scene.room, scene.boxes);
    for (int y = 0; y < 240; ++y)
      for (int x = 0; x < 320; ++x)
        if (i == 0 ? x < 200 : x >= 160) depth.at(x, y) = 0.0f;
    r.push_back(engine.process(depth.cview()));
  }
  ASSERT_EQ(r[0].status, FrameStatus::kFirst);
  ASSERT_EQ(r[1].status, FrameStatus::kLost) << r[1].reason;
  EXPECT_TRUE(r[1].pose.isApprox(r[0].pose)) << "the last good pose is kept";
  // The lost frame became the reference at that pose: the next frames track against it.
  for (std::size_t i = 2; i < r.size(); ++i) {
    ASSERT_EQ(r[i].status, FrameStatus::kTracked) << "frame " << i << ": " << r[i].reason;
    const Eigen::Isometry3d got = r[i - 1].pose.inverse() * r[i].pose;
    const Eigen::Isometry3d want = truth[i - 1].inverse() * truth[i];
    EXPECT_LT(translation_error_m(got, want), 1e-3) << "frame " << i;
    EXPECT_LT(rotation_error_deg(got, want), 0.05) << "frame " << i;
  }
}

TEST_P(EngineDeviceTest, InvalidFrameKeepsThePoseAndFirstValidFrameStarts) {
  const FusionParams p = synthetic_params(TrackingMode::kFrameToFrame);
  FusionEngine engine(GetParam(), p, 320, 240);
  Image<float> zeros(320, 240, 1, 0.0f);
  const FrameResult r = engine.process(zeros.cview());
  EXPECT_EQ(r.status, FrameStatus::kInvalid);
  EXPECT_EQ(r.valid_pixels, 0);
  EXPECT_FALSE(r.reason.empty());
  const BoxScene scene;
  const Image<float> depth = test::render_boxes(p.camera, 320, 240, p.initial_pose, &scene.room, scene.boxes);
  EXPECT_EQ(engine.process(depth.cview()).status, FrameStatus::kFirst);
  EXPECT_EQ(engine.process(zeros.cview()).status, FrameStatus::kInvalid);
  const FrameResult again = engine.process(depth.cview());
  EXPECT_EQ(again.status, FrameStatus::kTracked);
  EXPECT_LT(translation_error_m(again.pose, p.initial_pose), 1e-4);
}

TEST_P(EngineDeviceTest, ResetStartsAgainAndGivenPosesAreKept) {
  const FusionParams p = synthetic_params(TrackingMode::kFrameToFrame);
  const BoxScene scene;
  const auto truth = smooth_trajectory(p.initial_pose, 3);
  FusionEngine engine(GetParam(), p, 320, 240);
  const Image<float> d0 = test::render_boxes(p.camera, 320, 240, truth[0], &scene.room, scene.boxes);
  const Image<float> d2 = test::render_boxes(p.camera, 320, 240, truth[2], &scene.room, scene.boxes);
  const FrameResult given = engine.integrate_with_pose(d2.cview(), truth[2]);
  EXPECT_EQ(given.status, FrameStatus::kFirst);
  EXPECT_TRUE(engine.pose().isApprox(truth[2]));
  const FrameResult back = engine.process(d0.cview());  // tracked against the given pose's frame
  EXPECT_EQ(back.status, FrameStatus::kTracked) << back.reason;
  EXPECT_LT(translation_error_m(back.pose, truth[0]), 1e-3);
  EXPECT_LT(rotation_error_deg(back.pose, truth[0]), 0.05);
  engine.reset();
  EXPECT_TRUE(engine.pose().isApprox(p.initial_pose));
  EXPECT_EQ(engine.process(d2.cview()).status, FrameStatus::kFirst);
  EXPECT_THROW(engine.extract_mesh(), InvalidArgument) << "no volume in f2f without integration";
}

TEST_P(EngineDeviceTest, TinyFramesGiveAStatusNotAnException) {
  FusionParams p = synthetic_params(TrackingMode::kFrameToFrame);
  p.depth.levels = 4;
  const BoxScene scene;
  for (auto [w, h] : {std::pair{8, 6}, std::pair{1, 1}, std::pair{17, 5}}) {
    p.camera = {0.8f * w, 0.8f * w, 0.5f * (w - 1), 0.5f * (h - 1)};
    FusionEngine engine(GetParam(), p, w, h);
    const Image<float> depth = test::render_boxes(p.camera, w, h, p.initial_pose, &scene.room, scene.boxes);
    EXPECT_EQ(engine.process(depth.cview()).status, FrameStatus::kFirst);
    const FrameResult r = engine.process(depth.cview());
    EXPECT_TRUE(r.status == FrameStatus::kTracked || r.status == FrameStatus::kLost) << w << "x" << h;
    EXPECT_TRUE(r.pose.matrix().allFinite());
    EXPECT_LT(translation_error_m(r.pose, p.initial_pose), 1e-3) << w << "x" << h << ": " << r.reason;
  }
}

TEST_P(EngineDeviceTest, WrongSizeFrameThrows) {
  FusionEngine engine(GetParam(), synthetic_params(TrackingMode::kFrameToFrame), 64, 48);
  Image<float> wrong(32, 48, 1, 1.0f);
  EXPECT_THROW(engine.process(wrong.cview()), InvalidArgument);
}

/// Poses of `frames` real frames (f2f, no volume), with the pose bits.
/// Redkitchen frames 0.. tracked frame to frame; `photometric_sigma` > 0: with the photometric term on the
/// frames' colour images (7-Scenes' colour is not registered to its depth: a test of equal bits, not accuracy).
std::vector<FrameResult> track_real(const Device& device, int frames, float photometric_sigma = 0.0f,
                                    TrackingMode mode = TrackingMode::kFrameToFrame) {
  FusionParams p = test::redkitchen_params();
  p.icp.photometric_sigma = photometric_sigma;
  p.mode = mode;
  p.volume.resolution = {128, 128, 128};
  FusionEngine engine(device, p, 640, 480);
  std::vector<FrameResult> out;
  for (int i = 0; i < frames; ++i) {
    Image<std::uint8_t> rgb;
    if (photometric_sigma > 0.0f) rgb = s3d::test::read_redkitchen_color(i);
    out.push_back(
        engine.process(s3d::test::read_redkitchen_depth(i).cview(), rgb.data.empty() ? nullptr : rgb.data.data()));
  }
  return out;
}

bool same_pose_bits(const Eigen::Isometry3d& a, const Eigen::Isometry3d& b) {
  return std::memcmp(a.matrix().data(), b.matrix().data(), sizeof(double) * 16) == 0;
}

TEST_P(EngineDeviceTest, RealFramesTrackAndRunToRunIsIdentical) {
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000005.depth.png");
  const auto a = track_real(GetParam(), 4), b = track_real(GetParam(), 4);
  const Eigen::Isometry3d g0 = test::read_redkitchen_pose(0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(same_pose_bits(a[i].pose, b[i].pose)) << "frame " << i;
    EXPECT_EQ(a[i].inliers, b[i].inliers);
    EXPECT_EQ(a[i].status, i == 0 ? FrameStatus::kFirst : FrameStatus::kTracked) << a[i].reason;
    // Against the 7-Scenes (KinectFusion) ground truth, relative to frame 0: f2f drifts, but not by much
    // over a few frames.
    const Eigen::Isometry3d truth = test::read_redkitchen_pose(int(i));
    const Eigen::Isometry3d est = a[0].pose.inverse() * a[i].pose, ref = g0.inverse() * truth;
    EXPECT_LT(translation_error_m(est, ref), 0.01) << "frame " << i;
    EXPECT_LT(rotation_error_deg(est, ref), 0.5) << "frame " << i;
  }
}

TEST_P(EngineDeviceTest, CudaPosesEqualCpuPoses) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000005.depth.png");
  const auto cpu = track_real(Device(Device::Kind::kCpu), 6), dev = track_real(GetParam(), 6);
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_TRUE(same_pose_bits(cpu[i].pose, dev[i].pose)) << "frame " << i;
    EXPECT_EQ(cpu[i].inliers, dev[i].inliers) << "frame " << i;
    EXPECT_EQ(cpu[i].residual, dev[i].residual) << "frame " << i;
  }
}

TEST_P(EngineDeviceTest, CudaPosesEqualCpuPosesWithThePhotometricTerm) {
  S3D_SKIP_CPU_VS_CPU(GetParam());
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000005.color.jpg");
  for (TrackingMode mode : {TrackingMode::kFrameToFrame, TrackingMode::kFrameToModel}) {
    const auto cpu = track_real(Device(Device::Kind::kCpu), 6, 0.02f, mode),
               dev = track_real(GetParam(), 6, 0.02f, mode);
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_NE(cpu[i].status, FrameStatus::kLost) << "frame " << i << ": " << cpu[i].reason;
      EXPECT_TRUE(same_pose_bits(cpu[i].pose, dev[i].pose)) << "frame " << i;
      EXPECT_EQ(cpu[i].inliers, dev[i].inliers) << "frame " << i;
      EXPECT_EQ(cpu[i].residual, dev[i].residual) << "frame " << i;
    }
  }
}

// Not a timing assertion: prints the mean stage times of a short real sequence (GPU only; the CPU is slow).
TEST_P(EngineDeviceTest, ReportsStageTimesOnRealFrames) {
  if (GetParam().is_cpu()) GTEST_SKIP() << "timing report for the GPU only";
  S3D_REQUIRE_DATA(dir, "rgbd/7scenes_redkitchen_f000-299/frame-000010.color.jpg");
  std::vector<Image<float>> frames;
  std::vector<Image<std::uint8_t>> colors;
  for (int i = 0; i <= 10; ++i) {
    frames.push_back(s3d::test::read_redkitchen_depth(i));
    colors.push_back(s3d::test::read_redkitchen_color(i));
  }
  for (const float photometric : {0.0f, 0.02f}) {
    FusionParams p = test::redkitchen_params();
    p.icp.photometric_sigma = photometric;
    FusionEngine engine(GetParam(), p, 640, 480);
    double preprocess = 0.0, track = 0.0;
    int n = 0, tracked = 0;
    for (int round = 0; round < 5; ++round)
      for (int i = 0; i <= 10; ++i) {
        const FrameResult r = engine.process(frames[i].cview(), colors[i].data.data());
        if (round == 0) continue;  // warm-up
        preprocess += r.preprocess_ms;
        ++n;
        // Only single-attempt frames: the jump from frame 10 back to 0 may need the wider second attempt.
        if (r.status != FrameStatus::kTracked) continue;
        track += r.track_ms;
        ++tracked;
      }
    ASSERT_GT(tracked, 0);
    std::printf(
        "[ timing   ] %s%s: preprocess %.3f ms (mean of %d), ICP (3 levels, 10/5/4, one attempt) %.3f ms per "
        "frame (mean of %d)\n",
        describe_device(GetParam()).c_str(), photometric > 0.0f ? ", photometric term" : "", preprocess / n, n,
        track / tracked, tracked);
    RecordProperty(photometric > 0.0f ? "track_photometric_ms" : "track_ms", std::to_string(track / tracked));
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, EngineDeviceTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion
