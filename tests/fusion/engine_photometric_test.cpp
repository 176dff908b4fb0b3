// FusionEngine's photometric term on the motion depth alone cannot see: a camera sliding along a textured wall.
// The wall's depth is the same plane in every frame, so point-to-plane ICP has no constraint along it (the
// system is degenerate and the frames are lost); the wall's texture pins the slide. Analytic scene, every device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "s3d/fusion/fusion_engine.hpp"
#include "test_support.hpp"
#include "tracking_fixtures.hpp"

namespace s3d::fusion {
namespace {

constexpr int kWidth = 320, kHeight = 240;
constexpr double kWallZ = 2.0;

/// The wall's grey level at world (x, y): smooth texture of several scales, in [0.15, 0.85].
double wall_grey(double x, double y) {
  const double two_pi = 2.0 * M_PI;
  return 0.5 + 0.2 * std::sin(two_pi * x / 0.37) * std::cos(two_pi * y / 0.29) +
         0.15 * std::sin(two_pi * (x + 0.6 * y) / 0.13);
}

/// The floor's grey level at world (x, z): coarser than the wall's, since the floor is seen at a grazing angle
/// (a finer texture would alias into noise far away, as point-sampled pictures do).
double floor_grey(double x, double z) {
  const double two_pi = 2.0 * M_PI;
  return 0.5 + 0.2 * std::sin(two_pi * x / 0.5) * std::cos(two_pi * z / 1.3) + 0.1 * std::sin(two_pi * (x + z) / 0.9);
}

/// Depth and RGB of a textured plane seen from `pose` (camera to world, looking along +z): the wall z = kWallZ
/// (texture over x, y), or the floor y = kFloorY (texture over x, z; y points down, so the camera looks along the
/// floor and rays above the horizon see nothing).
constexpr double kFloorY = 1.5;
enum class Plane { kWall, kFloor };

void render_plane(Plane plane, const CameraIntrinsics& c, const Eigen::Isometry3d& pose, Image<float>& depth,
                  std::vector<std::uint8_t>& rgb) {
  depth = Image<float>(kWidth, kHeight);
  rgb.assign(static_cast<std::size_t>(kWidth) * kHeight * 3, 0);
  const int axis = plane == Plane::kWall ? 2 : 1;
  const double level = plane == Plane::kWall ? kWallZ : kFloorY;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      const Eigen::Vector3d ray((x - c.cx) / c.fx, (y - c.cy) / c.fy, 1.0);
      const Eigen::Vector3d d = pose.linear() * ray;
      const double t = (level - pose.translation()(axis)) / d(axis);
      if (!(t > 0.0 && t < 12.0)) continue;
      const Eigen::Vector3d hit = pose.translation() + t * d;
      depth.at(x, y) = static_cast<float>(t);  // ray.z = 1: t is the camera-frame depth
      const double g = plane == Plane::kWall ? wall_grey(hit.x(), hit.y()) : floor_grey(hit.x(), hit.z());
      for (int k = 0; k < 3; ++k)
        rgb[(static_cast<std::size_t>(y) * kWidth + x) * 3 + k] = static_cast<std::uint8_t>(std::lround(255.0 * g));
    }
}

void render_wall(const CameraIntrinsics& c, const Eigen::Isometry3d& pose, Image<float>& depth,
                 std::vector<std::uint8_t>& rgb) {
  render_plane(Plane::kWall, c, pose, depth, rgb);
}

/// 4 cm right, 1.5 cm down and 0.4 degrees about the optical axis per frame, parallel to the wall.
std::vector<Eigen::Isometry3d> slide(int frames) {
  Eigen::Isometry3d step = Eigen::Isometry3d::Identity();
  step.linear() = Eigen::AngleAxisd(0.4 * M_PI / 180.0, Eigen::Vector3d::UnitZ()).toRotationMatrix();
  step.translation() = Eigen::Vector3d(0.04, 0.015, 0.0);
  std::vector<Eigen::Isometry3d> poses{Eigen::Isometry3d::Identity()};
  for (int i = 1; i < frames; ++i) poses.push_back(poses.back() * step);
  return poses;
}

FusionParams wall_params(TrackingMode mode, float photometric_sigma) {
  FusionParams p;
  p.camera = {262.5f, 262.5f, 159.5f, 119.5f};
  p.mode = mode;
  p.integrate = mode == TrackingMode::kFrameToModel;
  p.depth.bilateral = false;  // noiseless depth
  p.initial_pose = Eigen::Isometry3d::Identity();
  p.icp.photometric_sigma = photometric_sigma;
  p.volume.resolution = {128, 128, 128};
  p.volume.size = {4.0f, 4.0f, 4.0f};
  p.volume.origin = {-2.0f, -2.0f, 0.5f};
  p.volume.truncation = 0.1f;
  return p;
}

class EnginePhotometricTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { S3D_SKIP_IF_NO_DEVICE(GetParam()); }

  std::vector<FrameResult> run(const FusionParams& p, const std::vector<Eigen::Isometry3d>& truth) {
    FusionEngine engine(GetParam(), p, kWidth, kHeight);
    std::vector<FrameResult> results;
    Image<float> depth;
    std::vector<std::uint8_t> rgb;
    for (const Eigen::Isometry3d& pose : truth) {
      render_wall(p.camera, pose, depth, rgb);
      results.push_back(engine.process(depth.cview(), rgb.data()));
    }
    return results;
  }

  void expect_tracks(TrackingMode mode) {
    const std::vector<Eigen::Isometry3d> truth = slide(8);
    const std::vector<FrameResult> results = run(wall_params(mode, 0.02f), truth);
    for (std::size_t i = 1; i < truth.size(); ++i) {
      const FrameResult& r = results[i];
      ASSERT_EQ(r.status, FrameStatus::kTracked) << "frame " << i << ": " << r.reason;
      EXPECT_LT((r.pose.translation() - truth[i].translation()).norm(), 3e-3) << "frame " << i;
      EXPECT_LT(Eigen::AngleAxisd(r.pose.linear().transpose() * truth[i].linear()).angle() * 180.0 / M_PI, 0.05)
          << "frame " << i;
    }
  }
};

TEST_P(EnginePhotometricTest, DepthAloneLosesTheSlide) {
  const std::vector<FrameResult> results = run(wall_params(TrackingMode::kFrameToFrame, 0.0f), slide(4));
  for (std::size_t i = 1; i < results.size(); ++i)
    EXPECT_EQ(results[i].status, FrameStatus::kLost) << "frame " << i << ": " << results[i].reason;
}

TEST_P(EnginePhotometricTest, TextureTracksTheSlideFrameToFrame) { expect_tracks(TrackingMode::kFrameToFrame); }

TEST_P(EnginePhotometricTest, TextureTracksTheSlideFrameToModel) { expect_tracks(TrackingMode::kFrameToModel); }

TEST_P(EnginePhotometricTest, TextureTracksForwardMotionAlongTheFloor) {
  // A road: the camera drives 0.3 m a frame along a textured floor, which depth sees as the same plane.
  FusionParams p = wall_params(TrackingMode::kFrameToFrame, 0.02f);
  p.icp.max_translation_step = 1.0f;  // the first frame has no velocity yet: 0.3 m from the last pose
  FusionEngine engine(GetParam(), p, kWidth, kHeight);
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  Image<float> depth;
  std::vector<std::uint8_t> rgb;
  for (int i = 0; i < 6; ++i) {
    render_plane(Plane::kFloor, p.camera, pose, depth, rgb);
    const FrameResult r = engine.process(depth.cview(), rgb.data());
    EXPECT_NE(r.status, FrameStatus::kLost) << "frame " << i << ": " << r.reason;
    EXPECT_LT((r.pose.translation() - pose.translation()).norm(), 0.01) << "frame " << i;
    pose.translation().z() += 0.3;
  }
}

TEST_P(EnginePhotometricTest, FramesWithoutColourTrackOnDepthAlone) {
  // The term needs the current frame's and the reference's grey levels: without colour it is off, and the
  // wall is lost again (rather than tracked against stale grey levels).
  const FusionParams p = wall_params(TrackingMode::kFrameToFrame, 0.02f);
  FusionEngine engine(GetParam(), p, kWidth, kHeight);
  const std::vector<Eigen::Isometry3d> truth = slide(3);
  Image<float> depth;
  std::vector<std::uint8_t> rgb;
  render_wall(p.camera, truth[0], depth, rgb);
  EXPECT_EQ(engine.process(depth.cview(), rgb.data()).status, FrameStatus::kFirst);
  render_wall(p.camera, truth[1], depth, rgb);
  EXPECT_EQ(engine.process(depth.cview()).status, FrameStatus::kLost);
}

INSTANTIATE_TEST_SUITE_P(Devices, EnginePhotometricTest, ::testing::ValuesIn(s3d::test::test_devices()),
                         s3d::test::device_test_name);

}  // namespace
}  // namespace s3d::fusion
