// Trajectory I/O, association, ATE and RPE against values worked out by hand on tiny trajectories.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "s3d/core/errors.hpp"
#include "s3d/fusion/trajectory.hpp"

namespace s3d::fusion {
namespace {

constexpr double kPi = 3.14159265358979323846;

StampedPose at(double t, const Eigen::Vector3d& position, const Eigen::Matrix3d& r = Eigen::Matrix3d::Identity()) {
  StampedPose p;
  p.timestamp = t;
  p.pose.linear() = r;
  p.pose.translation() = position;
  return p;
}

Eigen::Matrix3d rz(double deg) { return Eigen::AngleAxisd(deg * kPi / 180.0, Eigen::Vector3d::UnitZ()).matrix(); }

Eigen::Isometry3d random_pose(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::Quaterniond q(u(rng), u(rng), u(rng), u(rng));
  q.normalize();
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  t.linear() = q.toRotationMatrix();
  t.translation() = Eigen::Vector3d(u(rng), u(rng), u(rng)) * 5.0;
  return t;
}

std::string temp_file(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() / ("s3d_traj_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << content;
  return path.string();
}

/// The four points (+-1, 0, 0), (0, +-1, 0), a square in the xy plane centred on the origin.
Trajectory square(double a = 0.0, double b = 0.0) {
  return {at(0.0, {1 + a, 0, 0}), at(1.0, {0, 1 + b, 0}), at(2.0, {-1 - a, 0, 0}), at(3.0, {0, -1 - b, 0})};
}

TEST(TumTrajectory, ParsesCommentsAndNormalisesQuaternions) {
  const auto t = parse_tum_trajectory(
      "# ground truth\n\n1.5 1 2 3 0 0 0 1\n  # indented comment\n2.0,4,5,6,0,0,0.7071068,0.7071068\n", "gt.txt");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].timestamp, 1.5);
  EXPECT_EQ(t[0].pose.translation(), Eigen::Vector3d(1, 2, 3));
  EXPECT_NEAR((t[1].pose.linear() - rz(90)).norm(), 0.0, 1e-6);
}

TEST(TumTrajectory, ErrorsNameFileAndLine) {
  try {
    parse_tum_trajectory("0 0 0 0 0 0 0 1\n1 0 0 0 0 0 1\n", "est.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "est.txt:2: expected 8 numbers `timestamp tx ty tz qx qy qz qw`, found 7");
  }
  try {
    parse_tum_trajectory("0 0 0 x 0 0 0 1\n", "est.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "est.txt:1: `x` is not a finite number");
  }
  EXPECT_THROW(parse_tum_trajectory("0 0 0 0 0 0 0 0\n", "q.txt"), DataError);    // zero quaternion
  EXPECT_THROW(parse_tum_trajectory("0 0 0 nan 0 0 0 1\n", "n.txt"), DataError);  // not finite
  EXPECT_THROW(read_tum_trajectory("/nonexistent/s3d/gt.txt"), IoError);
}

TEST(TumTrajectory, WriteReadRoundTrip) {
  std::mt19937 rng(7);
  Trajectory t;
  for (int i = 0; i < 20; ++i) {
    StampedPose p;
    p.timestamp = 1305031102.160407 + i / 30.0;
    p.pose = random_pose(rng);
    t.push_back(p);
  }
  const auto path = temp_file("roundtrip.txt", "");
  write_tum_trajectory(path, t);
  const auto back = read_tum_trajectory(path);
  std::filesystem::remove(path);
  ASSERT_EQ(back.size(), t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    EXPECT_NEAR(back[i].timestamp, t[i].timestamp, 1e-6);
    EXPECT_NEAR((back[i].pose.matrix() - t[i].pose.matrix()).cwiseAbs().maxCoeff(), 0.0, 1e-8);
  }
  // qw >= 0 always, one line per pose.
  const std::string text = format_tum_trajectory(t);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 20);
}

TEST(TrajectoryPositions, TheTranslationsInOrder) {
  Trajectory t(2);
  t[0].pose.translation() = Eigen::Vector3d(1.5, -2, 3);
  t[1].pose = Eigen::AngleAxisd(0.3, Eigen::Vector3d::UnitZ()) * Eigen::Translation3d(1, 0, 0);
  const auto p = positions(t);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], (std::array<double, 3>{1.5, -2, 3}));
  EXPECT_DOUBLE_EQ(p[1][0], std::cos(0.3));
  EXPECT_DOUBLE_EQ(p[1][1], std::sin(0.3));
  EXPECT_EQ(p[1][2], 0.0);
  EXPECT_TRUE(positions({}).empty());
}

TEST(PoseMatrix, Reads7ScenesPoseFiles) {
  const auto good = temp_file("pose.txt", "0 -1 0 1.5\n1 0 0 -2\n0 0 1 0.25\n0 0 0 1\n");
  const auto pose = read_pose_matrix(good);
  EXPECT_NEAR((pose.linear() - rz(90)).norm(), 0.0, 1e-12);
  EXPECT_EQ(pose.translation(), Eigen::Vector3d(1.5, -2, 0.25));
  const auto bad_row = temp_file("bad_row.txt", "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 1 1\n");
  EXPECT_THROW(read_pose_matrix(bad_row), DataError);
  const auto short_file = temp_file("short.txt", "1 0 0 0\n0 1 0 0\n");
  try {
    read_pose_matrix(short_file);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), short_file + ": expected a 4x4 matrix (16 numbers), found 8");
  }
  for (const auto& p : {good, bad_row, short_file}) std::filesystem::remove(p);
}

TEST(Associate, GreedyBySmallestDifferenceEachUsedOnce) {
  // a[1] is 1 ms from b[0], a[0] 9 ms: a[1] wins, a[0] stays unmatched.
  auto pairs = associate({0.0, 0.01}, {0.009});
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0], std::make_pair(std::size_t{1}, std::size_t{0}));
  // Outside the 0.02 s window: no pair; |dt| = 0.02 exactly is outside too (strict <).
  EXPECT_TRUE(associate({0.0}, {0.025}).empty());
  EXPECT_TRUE(associate({0.0}, {0.02}).empty());
  // Unsorted inputs, offsets.
  pairs = associate({0.0, 0.0333, 0.0667}, {10.0667, 10.0, 10.0333}, -10.0);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].second, 1u);
  EXPECT_EQ(pairs[1].second, 2u);
  EXPECT_EQ(pairs[2].second, 0u);
}

TEST(Umeyama, RecoversAKnownRigidTransformOfFourPoints) {
  Eigen::Matrix3Xd p(3, 4);
  p << 0, 1, 0, 0,  //
      0, 0, 1, 0,   //
      0, 0, 0, 1;
  Eigen::Isometry3d t = Eigen::Isometry3d::Identity();
  t.linear() = Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()).matrix();
  t.translation() = Eigen::Vector3d(0.5, -1.0, 2.0);
  const Eigen::Matrix3Xd q = t * p;
  const Alignment a = align_umeyama(p, q);
  EXPECT_NEAR((a.rotation - t.linear()).norm(), 0.0, 1e-12);
  EXPECT_NEAR((a.translation - t.translation()).norm(), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(a.scale, 1.0);
  // With a scale of 2, Sim(3) finds it.
  const Eigen::Matrix3Xd q2 = (2.0 * t.linear() * p).colwise() + t.translation();
  const Alignment s = align_umeyama(p, q2, true);
  EXPECT_NEAR(s.scale, 2.0, 1e-12);
  EXPECT_NEAR((s.rotation - t.linear()).norm(), 0.0, 1e-12);
}

TEST(Ate, RigidlyMovedEstimateScoresZero) {
  Trajectory gt = square(), est;
  std::mt19937 rng(1);
  const Eigen::Isometry3d t = random_pose(rng);
  for (const auto& p : gt) est.push_back({p.timestamp, t * p.pose});
  const auto r = evaluate_ate(gt, est);
  EXPECT_EQ(r.error.count, 4u);
  EXPECT_NEAR(r.error.rmse, 0.0, 1e-12);
  EXPECT_NEAR(r.error.max, 0.0, 1e-12);
}

TEST(Ate, HandComputedRadialErrors) {
  // The estimate stretches the square by a along x and b along y. By symmetry the best rotation is I and
  // the translation 0, so the errors are exactly a, b, a, b.
  const double a = 0.03, b = 0.01;
  const auto r = evaluate_ate(square(), square(a, b));
  EXPECT_NEAR(r.error.rmse, std::sqrt((a * a + b * b) / 2.0), 1e-12);
  EXPECT_NEAR(r.error.mean, (a + b) / 2.0, 1e-12);
  EXPECT_NEAR(r.error.median, (a + b) / 2.0, 1e-12);
  EXPECT_NEAR(r.error.max, a, 1e-12);
  EXPECT_NEAR(r.error.min, b, 1e-12);
  EXPECT_NEAR((r.alignment.rotation - Eigen::Matrix3d::Identity()).norm(), 0.0, 1e-12);
  // A uniform stretch s: SE(3) leaves s at every point, Sim(3) scales it away (c = 1 / (1 + s)).
  EvalOptions sim;
  sim.with_scale = true;
  const auto u = evaluate_ate(square(), square(0.1, 0.1), sim);
  EXPECT_NEAR(u.error.rmse, 0.0, 1e-12);
  EXPECT_NEAR(u.alignment.scale, 1.0 / 1.1, 1e-12);
  EXPECT_NEAR(evaluate_ate(square(), square(0.1, 0.1)).error.rmse, 0.1, 1e-12);
}

TEST(Ate, AssociationOffsetAndIndexRange) {
  // The estimate's clock runs 100 s ahead and has an extra pose with no ground truth near it.
  Trajectory gt = square(0.0, 0.0), est = square(0.02, 0.02);
  for (auto& p : est) p.timestamp += 100.005;
  est.push_back(at(150.0, {9, 9, 9}));
  EvalOptions o;
  o.offset = -100.0;
  const auto r = evaluate_ate(gt, est, o, "est.txt");
  EXPECT_EQ(r.error.count, 4u);
  EXPECT_NEAR(r.error.rmse, 0.02, 1e-12);
  // Without the offset nothing associates: a one-line DataError naming the files.
  try {
    evaluate_ate(gt, est, {}, "est.txt");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("est.txt: only 0 poses associate", 0), 0u) << e.what();
  }
  // An index range: poses 0..2 only (aligned on their own).
  o.first_index = 0;
  o.last_index = 3;
  EXPECT_EQ(evaluate_ate(gt, est, o).error.count, 3u);
}

TEST(Rpe, ConstantVelocityWithAKnownPerStepError) {
  // Ground truth moves 0.1 m along x per frame at 10 Hz; the estimate 0.11 m and 0.5 deg of extra yaw
  // per frame. Per frame the relative motions differ by a 0.01 m (rotated) and 0.5 deg rotation.
  Trajectory gt, est;
  for (int k = 0; k < 31; ++k) {
    gt.push_back(at(k * 0.1, {0.1 * k, 0, 0}));
    est.push_back(at(k * 0.1, {0.11 * k, 0, 0}, rz(0.5 * k)));
  }
  // E = Q_rel^-1 P_rel with P_rel = (Rz(0.5 deg) [i-th yaw], R_i^T (0.11, 0, 0)): the translation of E is
  // R_i^T (0.11, 0, 0) - (0.1, 0, 0); for a pure-translation estimate it would be exactly 0.01.
  auto r = evaluate_rpe(gt, est, 1, DeltaUnit::kFrames);
  EXPECT_EQ(r.translation.count, 30u);
  EXPECT_NEAR(r.rotation.rmse, 0.5, 1e-9);
  EXPECT_NEAR(r.rotation.max, 0.5, 1e-9);
  // A pure-translation estimate: the error is exactly 0.01 m per frame, 0.1 m per second (10 frames).
  Trajectory est_t;
  for (int k = 0; k < 31; ++k) est_t.push_back(at(k * 0.1, {0.11 * k, 0, 0}));
  r = evaluate_rpe(gt, est_t, 1, DeltaUnit::kFrames);
  EXPECT_NEAR(r.translation.rmse, 0.01, 1e-12);
  EXPECT_NEAR(r.translation.mean, 0.01, 1e-12);
  EXPECT_NEAR(r.rotation.rmse, 0.0, 1e-6);
  r = evaluate_rpe(gt, est_t, 1.0, DeltaUnit::kSeconds);
  EXPECT_EQ(r.translation.count, 21u);  // pairs (0, 10) ... (20, 30)
  EXPECT_NEAR(r.translation.rmse, 0.1, 1e-12);
  r = evaluate_rpe(gt, est_t, 5, DeltaUnit::kFrames);
  EXPECT_EQ(r.translation.count, 26u);
  EXPECT_NEAR(r.translation.median, 0.05, 1e-12);
  EXPECT_THROW(evaluate_rpe(gt, est_t, 0.5, DeltaUnit::kFrames), InvalidArgument);
  EXPECT_THROW(evaluate_rpe(gt, est_t, 100, DeltaUnit::kFrames), DataError);
}

TEST(Evaluation, InvariantToARandomTransformOfTheEstimate) {
  std::mt19937 rng(42);
  std::normal_distribution<double> noise(0.0, 0.01);
  Trajectory gt, est;
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  for (int k = 0; k < 50; ++k) {
    Eigen::Isometry3d step = Eigen::Isometry3d::Identity();
    step.linear() = Eigen::AngleAxisd(0.02, Eigen::Vector3d(0.3, 1, 0.1).normalized()).matrix();
    step.translation() = Eigen::Vector3d(0.03, 0.01, 0.02);
    pose = pose * step;
    gt.push_back({k / 30.0, pose});
    Eigen::Isometry3d noisy = pose;
    noisy.translation() += Eigen::Vector3d(noise(rng), noise(rng), noise(rng));
    est.push_back({k / 30.0, noisy});
  }
  const auto ate = evaluate_ate(gt, est);
  const auto rpe = evaluate_rpe(gt, est, 1, DeltaUnit::kFrames);
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::Isometry3d t = random_pose(rng);
    Trajectory moved;
    for (const auto& p : est) moved.push_back({p.timestamp, t * p.pose});
    EXPECT_NEAR(evaluate_ate(gt, moved).error.rmse, ate.error.rmse, 1e-9);
    const auto r = evaluate_rpe(gt, moved, 1, DeltaUnit::kFrames);
    EXPECT_NEAR(r.translation.rmse, rpe.translation.rmse, 1e-9);
    EXPECT_NEAR(r.rotation.rmse, rpe.rotation.rmse, 1e-6);
  }
  EXPECT_GT(ate.error.rmse, 0.005);
}

}  // namespace
}  // namespace s3d::fusion
