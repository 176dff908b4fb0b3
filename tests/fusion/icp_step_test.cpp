// The ICP iteration's own math (icp_step_math.hpp), against libm and Eigen: sine and cosine, the 6x6 LDLT
// solve, the Rz Ry Rx increment, and the decisions of icp_step (give up a coarse level, stop, update).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include <Eigen/Dense>

#include "icp_step_math.hpp"

namespace s3d::fusion {
namespace {

using Matrix6d = Eigen::Matrix<double, 6, 6>;
using Vector6d = Eigen::Matrix<double, 6, 1>;

/// Sums in kIcpTerms order for the system A x = g (A symmetric) with `inliers` inliers.
std::vector<double> sums_of(const Matrix6d& a, const Vector6d& g, double inliers) {
  std::vector<double> s(detail::kIcpTerms, 0.0);
  for (int i = 0, k = 0; i < 6; ++i)
    for (int j = i; j < 6; ++j, ++k) s[k] = a(i, j);
  for (int i = 0; i < 6; ++i) s[21 + i] = g(i);
  s[27] = 0.5;
  s[28] = inliers;
  return s;
}

TEST(IcpStep, SinCosAreCloseToLibm) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> small(-0.2, 0.2), wide(-40.0, 40.0);
  for (int i = 0; i < 20000; ++i) {
    const double x = i % 2 ? small(rng) : wide(rng);
    double s, c;
    detail::sin_cos(x, s, c);
    EXPECT_NEAR(s, std::sin(x), 4e-16) << x;
    EXPECT_NEAR(c, std::cos(x), 4e-16) << x;
  }
  double s, c;
  detail::sin_cos(0.0, s, c);
  EXPECT_EQ(s, 0.0);
  EXPECT_EQ(c, 1.0);
  detail::sin_cos(1e-9, s, c);
  EXPECT_EQ(s, 1e-9);
  EXPECT_EQ(c, 1.0);
}

TEST(IcpStep, LdltSolvesSymmetricPositiveDefiniteSystems) {
  std::mt19937 rng(5);
  std::normal_distribution<double> n(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    Matrix6d m;
    for (int i = 0; i < 36; ++i) m(i / 6, i % 6) = n(rng);
    const Matrix6d a = m.transpose() * m + 0.01 * Matrix6d::Identity();
    Vector6d g;
    for (int i = 0; i < 6; ++i) g(i) = n(rng);
    const std::vector<double> s = sums_of(a, g, 100);
    double d[6], x[6];
    detail::ldlt6_solve(s.data(), s.data() + 21, d, x);
    const Vector6d ref = a.ldlt().solve(g);
    double det = 1.0;
    for (int k = 0; k < 6; ++k) {
      EXPECT_GT(d[k], 0.0);
      EXPECT_NEAR(x[k], ref(k), 1e-8 * ref.norm()) << "trial " << trial;
      det *= d[k];
    }
    EXPECT_NEAR(det, a.determinant(), 1e-9 * std::fabs(a.determinant()));
  }
}

TEST(IcpStep, IncrementIsRzRyRx) {
  double r[9];
  detail::rotation_zyx(0.03, -0.02, 0.05, r);
  const Eigen::Matrix3d ref =
      (Eigen::AngleAxisd(0.05, Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(-0.02, Eigen::Vector3d::UnitY()) *
       Eigen::AngleAxisd(0.03, Eigen::Vector3d::UnitX()))
          .toRotationMatrix();
  for (int k = 0; k < 9; ++k) EXPECT_NEAR(r[k], ref(k / 3, k % 3), 1e-15) << k;
}

TEST(IcpStep, AppliesTheSolvedIncrementToThePose) {
  detail::IcpPose start{};
  start.r[0] = start.r[4] = start.r[8] = 1.0;
  start.t[0] = 1.0;
  detail::IcpState s = detail::icp_initial_state(start);
  Vector6d g;
  g << 0.0, 0.0, 0.1, 0.01, 0.02, 0.03;
  const std::vector<double> sums = sums_of(2.0 * Matrix6d::Identity(), 2.0 * g, 1000);
  detail::icp_step(s, sums.data(), 0, 1e6);
  EXPECT_EQ(s.stop, detail::kIcpRunning);
  EXPECT_EQ(s.iterations, 1);
  EXPECT_EQ(s.inliers, 1000);
  EXPECT_EQ(s.condition, 1.0);
  const Eigen::Matrix3d rz = Eigen::AngleAxisd(0.1, Eigen::Vector3d::UnitZ()).toRotationMatrix();
  const Eigen::Vector3d t = rz * Eigen::Vector3d(1.0, 0.0, 0.0) + g.tail<3>();
  for (int k = 0; k < 9; ++k) EXPECT_NEAR(s.pose.r[k], rz(k / 3, k % 3), 1e-15);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(s.pose.t[k], t(k), 1e-15);
  for (int k = 0; k < 21; ++k) EXPECT_EQ(s.last_a[k], sums[k]);
}

TEST(IcpStep, TooFewInliersGiveUpACoarseLevelAndStopAtLevelZero) {
  const detail::IcpPose start{{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}};
  const std::vector<double> five = sums_of(Matrix6d::Identity(), Vector6d::Ones(), 5);
  detail::IcpState s = detail::icp_initial_state(start);
  detail::icp_step(s, five.data(), 2, 1e6);
  EXPECT_EQ(s.stop, detail::kIcpRunning);
  EXPECT_FALSE(detail::icp_runs_level(s, 2));
  EXPECT_TRUE(detail::icp_runs_level(s, 1));
  EXPECT_EQ(s.pose.t[0], 0.0);
  detail::icp_step(s, five.data(), 0, 1e6);
  EXPECT_EQ(s.stop, detail::kIcpTooFewCorrespondences);
  EXPECT_EQ(s.stop_level, 0);
  EXPECT_EQ(s.iterations, 2);
  EXPECT_FALSE(detail::icp_runs_level(s, 0));
}

TEST(IcpStep, DegenerateAndSingularSystemsStopWithoutMoving) {
  const detail::IcpPose start{{1, 0, 0, 0, 1, 0, 0, 0, 1}, {0, 0, 0}};
  Matrix6d sliding = Matrix6d::Identity();
  sliding(3, 3) = 0.0;  // a plane: no constraint along one translation
  detail::IcpState s = detail::icp_initial_state(start);
  detail::icp_step(s, sums_of(sliding, Vector6d::Ones(), 100).data(), 1, 1e6);
  EXPECT_EQ(s.stop, detail::kIcpDegenerate);
  EXPECT_EQ(s.stop_level, 1);
  EXPECT_TRUE(std::isinf(s.condition));

  // Scale alone does not make a system singular: the noise weighting scales a far scene's system by 1e-6
  // and more (det 1e-36 and less), and the update is the same as at scale 1.
  for (const double scale : {1e-3, 1e-6, 1e-12}) {
    s = detail::icp_initial_state(start);
    detail::icp_step(s, sums_of(scale * Matrix6d::Identity(), scale * Vector6d::Ones(), 100).data(), 0, 1e6);
    EXPECT_EQ(s.stop, detail::kIcpRunning) << scale;
    EXPECT_NEAR(s.pose.t[0], 1.0, 1e-9) << scale;
  }

  s = detail::icp_initial_state(start);
  Vector6d nan_g = Vector6d::Ones();
  nan_g(2) = std::numeric_limits<double>::quiet_NaN();
  detail::icp_step(s, sums_of(Matrix6d::Identity(), nan_g, 100).data(), 0, 1e6);
  EXPECT_EQ(s.stop, detail::kIcpSingular);

  // An absurd rotation (beyond where the shared sine is exact on both backends) is not applied either.
  s = detail::icp_initial_state(start);
  Vector6d spin = Vector6d::Zero();
  spin(1) = 2.0 * detail::kMaxIncrementAngle;
  detail::icp_step(s, sums_of(Matrix6d::Identity(), spin, 100).data(), 0, 1e6);
  EXPECT_EQ(s.stop, detail::kIcpSingular);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(s.pose.t[k], 0.0);
  for (int k = 0; k < 21; ++k) EXPECT_EQ(s.last_a[k], 0.0);
}

}  // namespace
}  // namespace s3d::fusion
