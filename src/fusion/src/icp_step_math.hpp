#pragma once
// Internal: what one ICP iteration does after its reduction — the 6x6 solve in double and the pose update —
// written once for the CPU oracle and the CUDA kernel, so that the whole attempt (every level and
// iteration) can run on the GPU without a host round trip per iteration and still give the CPU's bits.
// Basic IEEE operations only (+ - * /, each rounded, no FMA contraction): no libm, no Eigen; sine and cosine
// come from the polynomial below, not from libm or CUDA (they differ in the last bit).
#include <cmath>
#include <cstdint>

#include "fusion_math.hpp"
#include "tracking_math.hpp"

namespace s3d::fusion::detail {

/// A camera-to-world pose in double: p' = R p + t, R row-major.
struct IcpPose {
  double r[9];
  double t[3];
};

/// Why an attempt stopped early (FusionEngine::track turns it into a message).
enum IcpStop : int {
  kIcpRunning = 0,
  kIcpTooFewCorrespondences = 1,  ///< level 0 with fewer than 6 inliers
  kIcpDegenerate = 2,             ///< LDLT pivot spread above the limit (or a pivot <= 0)
  kIcpSingular = 3,               ///< a non-finite update or an angle above kMaxIncrementAngle
};

/// The state of one ICP attempt, carried from iteration to iteration (device memory on CUDA).
struct IcpState {
  IcpPose pose;        ///< the current estimate
  double last_a[21];   ///< A of the last system that was solved (zero before the first)
  double residual_sq;  ///< of the last system built
  double condition;    ///< LDLT pivot spread of the last system factorised
  long long inliers;   ///< of the last system built
  int iterations;      ///< systems built
  int stop;            ///< IcpStop
  int stop_level;      ///< the level that stopped the attempt
  int skip_level;      ///< a coarse level given up for too few correspondences (-1: none)
};

S3D_HOST_DEVICE S3D_FORCEINLINE IcpState icp_initial_state(const IcpPose& start) {
  IcpState s{};
  s.pose = start;
  s.skip_level = -1;
  return s;
}

/// Whether the attempt still runs the iterations of `level`.
S3D_HOST_DEVICE S3D_FORCEINLINE bool icp_runs_level(const IcpState& s, int level) {
  return s.stop == kIcpRunning && s.skip_level != level;
}

/// The float transform the association uses (each entry rounded to nearest).
S3D_HOST_DEVICE S3D_FORCEINLINE Rigid to_rigid(const IcpPose& p) {
  Rigid r{};
  for (int k = 0; k < 9; ++k) r.r[k] = static_cast<float>(p.r[k]);
  for (int k = 0; k < 3; ++k) r.t[k] = static_cast<float>(p.t[k]);
  return r;
}

S3D_HOST_DEVICE S3D_FORCEINLINE bool is_finite(double v) { return v - v == 0.0; }

S3D_HOST_DEVICE S3D_FORCEINLINE double round_half_even(double v) {
#if defined(__CUDA_ARCH__)
  return rint(v);
#else
  return std::nearbyint(v);  // the default rounding mode: to nearest, ties to even
#endif
}

/// sin and cos of a finite `x`: Cody-Waite reduction by pi/2 (exact for |x| < 2^20 pi/2) and Taylor
/// polynomials in Horner form on [-pi/4, pi/4] (truncation below 1e-19; within 2 ulp of the true values).
S3D_HOST_DEVICE S3D_FORCEINLINE void sin_cos(double x, double& s, double& c) {
  constexpr double kTwoOverPi = 6.36619772367581382433e-01;
  constexpr double kPiOver2Hi = 1.57079632673412561417e+00;  // 33 bits: k * hi is exact for small k
  constexpr double kPiOver2Lo = 6.07710050650619224932e-11;
  const double k = round_half_even(x * kTwoOverPi);
  const double r = (x - (k * kPiOver2Hi)) - (k * kPiOver2Lo);
  const double r2 = r * r;
  double ps = 1.0 / 355687428096000.0;  // 1/17!
  ps = (ps * r2) - (1.0 / 1307674368000.0);
  ps = (ps * r2) + (1.0 / 6227020800.0);
  ps = (ps * r2) - (1.0 / 39916800.0);
  ps = (ps * r2) + (1.0 / 362880.0);
  ps = (ps * r2) - (1.0 / 5040.0);
  ps = (ps * r2) + (1.0 / 120.0);
  ps = (ps * r2) - (1.0 / 6.0);
  const double sr = r + (r * (r2 * ps));
  double pc = 1.0 / 6402373705728000.0;  // 1/18!
  pc = (pc * r2) - (1.0 / 20922789888000.0);
  pc = (pc * r2) + (1.0 / 87178291200.0);
  pc = (pc * r2) - (1.0 / 479001600.0);
  pc = (pc * r2) + (1.0 / 3628800.0);
  pc = (pc * r2) - (1.0 / 40320.0);
  pc = (pc * r2) + (1.0 / 720.0);
  pc = (pc * r2) - (1.0 / 24.0);
  pc = (pc * r2) + 0.5;
  const double cr = 1.0 - (r2 * pc);
  const long long q = static_cast<long long>(k) & 3;
  s = q == 0 ? sr : q == 1 ? cr : q == 2 ? -sr : -cr;
  c = q == 0 ? cr : q == 1 ? -sr : q == 2 ? -cr : sr;
}

/// A = L D L^T of a symmetric 6x6 matrix (`a`: upper triangle, row-major, 21 values), without pivoting, and
/// the solution of A x = g. `d` receives the pivots; x is meaningful only when every pivot is > 0.
S3D_HOST_DEVICE S3D_FORCEINLINE void ldlt6_solve(const double* a, const double* g, double* d, double* x) {
  double m[6][6];
  for (int i = 0, k = 0; i < 6; ++i)
    for (int j = i; j < 6; ++j, ++k) m[i][j] = m[j][i] = a[k];
  // Reciprocals of the pivots, multiplied in: 6 divisions instead of 21 (each a long latency on a GPU thread).
  double l[6][6] = {}, inv_d[6];
  for (int j = 0; j < 6; ++j) {
    double dj = m[j][j];
    for (int k = 0; k < j; ++k) dj = dj - ((l[j][k] * l[j][k]) * d[k]);
    d[j] = dj;
    inv_d[j] = 1.0 / dj;
    l[j][j] = 1.0;
    for (int i = j + 1; i < 6; ++i) {
      double v = m[i][j];
      for (int k = 0; k < j; ++k) v = v - ((l[i][k] * l[j][k]) * d[k]);
      l[i][j] = v * inv_d[j];
    }
  }
  double y[6];
  for (int i = 0; i < 6; ++i) {
    double v = g[i];
    for (int k = 0; k < i; ++k) v = v - (l[i][k] * y[k]);
    y[i] = v;
  }
  for (int i = 0; i < 6; ++i) y[i] = y[i] * inv_d[i];
  for (int i = 5; i >= 0; --i) {
    double v = y[i];
    for (int k = i + 1; k < 6; ++k) v = v - (l[k][i] * x[k]);
    x[i] = v;
  }
}

/// R_inc = Rz(gamma) Ry(beta) Rx(alpha) for the update's angles (alpha, beta, gamma) = (x0, x1, x2).
S3D_HOST_DEVICE S3D_FORCEINLINE void rotation_zyx(double alpha, double beta, double gamma, double* r) {
  double sa, ca, sb, cb, sg, cg;
  sin_cos(alpha, sa, ca);
  sin_cos(beta, sb, cb);
  sin_cos(gamma, sg, cg);
  r[0] = cg * cb;
  r[1] = ((cg * sb) * sa) - (sg * ca);
  r[2] = ((cg * sb) * ca) + (sg * sa);
  r[3] = sg * cb;
  r[4] = ((sg * sb) * sa) + (cg * ca);
  r[5] = ((sg * sb) * ca) - (cg * sa);
  r[6] = -sb;
  r[7] = cb * sa;
  r[8] = cb * ca;
}

/// The largest update angle (radians) icp_step applies; beyond it the system counts as singular.
constexpr double kMaxIncrementAngle = 1.0e6;

/// One iteration after its reduction: `sums` are the kIcpTerms reduced values at `level`. Records the
/// system; with fewer than 6 inliers gives up a coarse level (the finer ones still decide) or stops at level 0;
/// stops on a pivot spread above `max_condition` (scale-free: the noise weighting scales a far scene's system
/// by 1e-6 and more; a pivot <= 0 counts as infinite spread) or a singular update (non-finite, or an angle
/// above kMaxIncrementAngle); else solves and applies
/// R <- R_inc R, t <- R_inc t + t_inc.
S3D_HOST_DEVICE S3D_FORCEINLINE void icp_step(IcpState& s, const double* sums, int level, double max_condition) {
  s.iterations += 1;
  s.residual_sq = sums[27];
  s.inliers = static_cast<long long>(sums[28]);
  if (s.inliers < 6) {
    if (level > 0) {
      s.skip_level = level;
    } else {
      s.stop = kIcpTooFewCorrespondences;
      s.stop_level = level;
    }
    return;
  }
  double d[6], x[6];
  ldlt6_solve(sums, sums + 21, d, x);
  double lo = d[0], hi = d[0];
  for (int k = 1; k < 6; ++k) {
    lo = d[k] < lo ? d[k] : lo;
    hi = d[k] > hi ? d[k] : hi;
  }
  s.condition = lo > 0.0 ? hi / lo : static_cast<double>(INFINITY);
  if (!(s.condition <= max_condition)) {
    s.stop = kIcpDegenerate;
    s.stop_level = level;
    return;
  }
  // A finite update whose angles stay where sin_cos's reduction is exact (|x| < 2^20 pi/2): any real ICP step is
  // far below, and a larger one, meaningless anyway, would leave the two backends' sines undefined.
  bool finite = true;
  for (int k = 0; k < 6; ++k) finite = finite && is_finite(x[k]);
  for (int k = 0; k < 3; ++k) finite = finite && (x[k] < 0.0 ? -x[k] : x[k]) <= kMaxIncrementAngle;
  if (!finite) {
    s.stop = kIcpSingular;
    s.stop_level = level;
    return;
  }
  for (int k = 0; k < 21; ++k) s.last_a[k] = sums[k];
  double inc[9];
  rotation_zyx(x[0], x[1], x[2], inc);
  IcpPose next;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      next.r[3 * i + j] =
          ((inc[3 * i] * s.pose.r[j]) + (inc[3 * i + 1] * s.pose.r[3 + j])) + (inc[3 * i + 2] * s.pose.r[6 + j]);
    next.t[i] =
        (((inc[3 * i] * s.pose.t[0]) + (inc[3 * i + 1] * s.pose.t[1])) + (inc[3 * i + 2] * s.pose.t[2])) + x[3 + i];
  }
  s.pose = next;
}

}  // namespace s3d::fusion::detail
