// evo's APE / RPE (s3d/fusion/evo_metrics.hpp) against values worked out by hand on tiny trajectories; the
// comparison with evo itself on real data is tests/cli/icp_fuse_evo_test.py.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "s3d/core/errors.hpp"
#include "s3d/fusion/evo_metrics.hpp"

namespace s3d::fusion::evo {
namespace {

constexpr double kPi = 3.14159265358979323846;

StampedPose at(double t, const Eigen::Vector3d& p, double yaw_deg = 0.0) {
  StampedPose s;
  s.timestamp = t;
  s.pose.linear() = Eigen::AngleAxisd(yaw_deg * kPi / 180.0, Eigen::Vector3d::UnitZ()).matrix();
  s.pose.translation() = p;
  return s;
}

TEST(EvoMetrics, StatisticsAreNumpys) {
  const Statistics s = statistics({3.0, 1.0, 4.0, 2.0});
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);  // the mean of the middle two
  EXPECT_DOUBLE_EQ(s.sse, 30.0);
  EXPECT_DOUBLE_EQ(s.rmse, std::sqrt(7.5));
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(1.25));  // population
  EXPECT_DOUBLE_EQ(statistics({5.0, 1.0, 2.0}).median, 2.0);
  EXPECT_THROW(statistics({}), InvalidArgument);
}

TEST(EvoMetrics, AssociationTakesTheNearestWithinTheWindowTiesToTheEarlier) {
  Trajectory ref, est;
  for (int i = 0; i < 10; ++i) ref.push_back(at(0.01 * i, Eigen::Vector3d::Zero()));  // 100 Hz
  est.push_back(at(0.015, Eigen::Vector3d::Zero()));  // a tie between 0.01 and 0.02: the earlier
  est.push_back(at(0.052, Eigen::Vector3d::Zero()));  // nearest 0.05
  est.push_back(at(0.5, Eigen::Vector3d::Zero()));    // beyond the last by more than the window: none
  const auto pairs = associate(ref, est, 0.01, "t");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0], std::make_pair(std::size_t{0}, std::size_t{1}));
  EXPECT_EQ(pairs[1], std::make_pair(std::size_t{1}, std::size_t{5}));
  EXPECT_THROW(associate(ref, {at(9.0, Eigen::Vector3d::Zero())}, 0.01, "t"), DataError);
  // Unsorted stamps of the longer one: the first nearest (evo's linear matching), not an error.
  std::swap(ref[2], ref[7]);
  const auto unsorted = associate(ref, est, 0.01, "t");
  ASSERT_EQ(unsorted.size(), 2u);
  EXPECT_EQ(unsorted[0].second, 1u);
  EXPECT_EQ(unsorted[1].second, 5u);
}

TEST(EvoMetrics, ApeOfAShiftedTrajectoryIsTheShiftUnalignedAndZeroAligned) {
  Trajectory ref, est;
  for (int i = 0; i < 6; ++i) {
    const Eigen::Vector3d p(std::cos(i), std::sin(i), 0.1 * i);
    ref.push_back(at(i, p, 10.0 * i));
    est.push_back(at(i, p + Eigen::Vector3d(0.3, 0.0, 0.4), 10.0 * i + 2.0));
  }
  const Result none = ape(ref, est, PoseRelation::kTranslationPart, Alignment::kNone);
  EXPECT_EQ(none.title, "APE w.r.t. translation part (m)\n(not aligned)");
  EXPECT_EQ(none.label, "APE (m)");
  ASSERT_EQ(none.errors.size(), 6u);
  for (double e : none.errors) EXPECT_NEAR(e, 0.5, 1e-12);
  EXPECT_NEAR(none.stats.sse, 6 * 0.25, 1e-12);
  const Result angle = ape(ref, est, PoseRelation::kRotationAngleDeg, Alignment::kNone);
  EXPECT_EQ(angle.title, "APE w.r.t. rotation angle in degrees (deg)\n(not aligned)");
  for (double e : angle.errors) EXPECT_NEAR(e, 2.0, 1e-9);
  const Result aligned = ape(ref, est, PoseRelation::kTranslationPart, Alignment::kSE3);
  EXPECT_EQ(aligned.title, "APE w.r.t. translation part (m)\n(with SE(3) Umeyama alignment)");
  EXPECT_LT(aligned.stats.max, 1e-9);
  EXPECT_TRUE(aligned.aligned);
  EXPECT_NEAR(aligned.alignment(0, 3), -0.3, 1e-9);
  EXPECT_EQ(ape(ref, est, PoseRelation::kFull, Alignment::kSim3).title,
            "APE w.r.t. full transformation (unit-less)\n(with Sim(3) Umeyama alignment)");
}

TEST(EvoMetrics, RpePairsByFramesAndByPathLength) {
  Trajectory ref, est;
  for (int i = 0; i < 7; ++i) {
    ref.push_back(at(i, Eigen::Vector3d(0.4 * i, 0, 0)));
    est.push_back(at(i, Eigen::Vector3d(0.5 * i, 0, 0)));  // 0.1 m too long a step
  }
  const Result frames = rpe(ref, est, PoseRelation::kTranslationPart, Alignment::kNone, 2.0, DeltaUnit::kFrames);
  EXPECT_EQ(frames.title,
            "RPE w.r.t. translation part (m)\nfor delta = 2 (frames) using consecutive pairs\n(not aligned)");
  ASSERT_EQ(frames.errors.size(), 3u);  // (0, 2), (2, 4), (4, 6)
  for (double e : frames.errors) EXPECT_NEAR(e, 0.2, 1e-12);
  ASSERT_EQ(frames.timestamps.size(), 3u);
  EXPECT_DOUBLE_EQ(frames.timestamps[0], 2.0);
  // The estimate's path grows by 0.5 m a pose: a cut at every 1.2 m of path is every third pose.
  const Result metres = rpe(ref, est, PoseRelation::kTranslationPart, Alignment::kNone, 1.2, DeltaUnit::kMeters);
  EXPECT_EQ(metres.title,
            "RPE w.r.t. translation part (m)\nfor delta = 1.2 (m) using consecutive pairs\n(not aligned)");
  ASSERT_EQ(metres.errors.size(), 2u);  // (0, 3), (3, 6)
  for (double e : metres.errors) EXPECT_NEAR(e, 0.3, 1e-12);
  EXPECT_NE(rpe(ref, est, PoseRelation::kTranslationPart, Alignment::kNone, 1.0, DeltaUnit::kMeters)
                .title.find("for delta = 1.0 (m) using"),
            std::string::npos);  // Python's repr of a float, as evo prints it
  EXPECT_THROW(rpe(ref, est, PoseRelation::kTranslationPart, Alignment::kNone, 50.0, DeltaUnit::kMeters), DataError);
  EXPECT_THROW(rpe(ref, est, PoseRelation::kTranslationPart, Alignment::kNone, 1.5, DeltaUnit::kFrames),
               InvalidArgument);
}

TEST(EvoMetrics, BlockIsEvosText) {
  Result r;
  r.title = "APE w.r.t. translation part (m)\n(with SE(3) Umeyama alignment)";
  r.stats = statistics({0.5, 0.25});
  EXPECT_EQ(format_block(r),
            "APE w.r.t. translation part (m)\n(with SE(3) Umeyama alignment)\n\n"
            "       max\t0.500000\n      mean\t0.375000\n    median\t0.375000\n       min\t0.250000\n"
            "      rmse\t0.395285\n       sse\t0.312500\n       std\t0.125000\n");
  EXPECT_EQ(parse_alignment("sim3"), Alignment::kSim3);
  EXPECT_EQ(parse_pose_relation("angle_rad"), PoseRelation::kRotationAngleRad);
  EXPECT_THROW(parse_pose_relation("point_distance"), InvalidArgument);
}

}  // namespace
}  // namespace s3d::fusion::evo
