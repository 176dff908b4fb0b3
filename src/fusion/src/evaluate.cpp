// ATE and RPE (Sturm et al., IROS 2012) with the Horn/Umeyama closed-form alignment; definitions in
// docs/ICP-FUSE.md ("Evaluation").
#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/SVD>

#include "s3d/core/errors.hpp"
#include "s3d/fusion/trajectory.hpp"

namespace s3d::fusion {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// Estimate index -> ground-truth index for the associated poses, sorted by estimate index.
std::vector<std::pair<std::size_t, std::size_t>> matched(const Trajectory& gt, const Trajectory& est,
                                                         const EvalOptions& o) {
  std::vector<double> tg(gt.size()), te(est.size());
  for (std::size_t i = 0; i < gt.size(); ++i) tg[i] = gt[i].timestamp;
  for (std::size_t i = 0; i < est.size(); ++i) te[i] = est[i].timestamp;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const auto& [g, e] : associate(tg, te, o.offset, o.max_difference)) out.emplace_back(e, g);
  std::sort(out.begin(), out.end());
  return out;
}

double rotation_angle_deg(const Eigen::Matrix3d& r) {
  const double c = std::clamp((r.trace() - 1.0) / 2.0, -1.0, 1.0);
  return std::acos(c) * 180.0 / kPi;
}

}  // namespace

Alignment align_umeyama(const Eigen::Matrix3Xd& model, const Eigen::Matrix3Xd& data, bool with_scale) {
  S3D_EXPECTS(model.cols() == data.cols(), "align_umeyama: model and data differ in size");
  S3D_EXPECTS(model.cols() > 0, "align_umeyama: no points");
  const double n = static_cast<double>(model.cols());
  const Eigen::Vector3d mm = model.rowwise().mean();
  const Eigen::Vector3d dm = data.rowwise().mean();
  const Eigen::Matrix3Xd mc = model.colwise() - mm;
  const Eigen::Matrix3Xd dc = data.colwise() - dm;
  const Eigen::Matrix3d sigma = dc * mc.transpose() / n;
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(sigma, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Vector3d s(1.0, 1.0, 1.0);
  if (svd.matrixU().determinant() * svd.matrixV().determinant() < 0.0) s(2) = -1.0;  // a rotation, not a reflection
  Alignment a;
  a.rotation = svd.matrixU() * s.asDiagonal() * svd.matrixV().transpose();
  if (with_scale) {
    const double var_m = mc.squaredNorm() / n;
    a.scale = var_m > 0.0 ? svd.singularValues().dot(s) / var_m : 1.0;
  }
  a.translation = dm - a.scale * a.rotation * mm;
  return a;
}

ErrorStats error_stats(std::vector<double> e) {
  ErrorStats s;
  s.count = e.size();
  if (e.empty()) return s;
  double sum = 0.0, sq = 0.0;
  for (double v : e) {
    sum += v;
    sq += v * v;
  }
  const double n = static_cast<double>(e.size());
  s.mean = sum / n;
  s.rmse = std::sqrt(sq / n);
  std::sort(e.begin(), e.end());
  s.min = e.front();
  s.max = e.back();
  const std::size_t h = e.size() / 2;
  s.median = e.size() % 2 ? e[h] : 0.5 * (e[h - 1] + e[h]);
  return s;
}

AteResult evaluate_ate(const Trajectory& gt, const Trajectory& est, const EvalOptions& o, const std::string& where) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (const auto& p : matched(gt, est, o))
    if (p.first >= o.first_index && p.first < o.last_index) pairs.push_back(p);
  if (pairs.size() < 3)
    throw DataError(where + ": only " + std::to_string(pairs.size()) +
                    " poses associate with the ground truth (|dt| < " + std::to_string(o.max_difference) +
                    " s); ATE needs 3 or more");
  Eigen::Matrix3Xd p(3, static_cast<Eigen::Index>(pairs.size())), q(3, static_cast<Eigen::Index>(pairs.size()));
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    p.col(static_cast<Eigen::Index>(k)) = est[pairs[k].first].pose.translation();
    q.col(static_cast<Eigen::Index>(k)) = gt[pairs[k].second].pose.translation();
  }
  AteResult r;
  r.alignment = align_umeyama(p, q, o.with_scale);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto c = static_cast<Eigen::Index>(k);
    const Eigen::Vector3d aligned = r.alignment.scale * r.alignment.rotation * p.col(c) + r.alignment.translation;
    r.errors.push_back((aligned - q.col(c)).norm());
    r.estimate_index.push_back(pairs[k].first);
  }
  r.error = error_stats(r.errors);
  return r;
}

RpeResult evaluate_rpe(const Trajectory& gt, const Trajectory& est, double delta, DeltaUnit unit, const EvalOptions& o,
                       const std::string& where) {
  S3D_EXPECTS(std::isfinite(delta) && delta > 0.0, "RPE: the interval must be > 0");
  if (unit == DeltaUnit::kFrames)
    S3D_EXPECTS(delta == std::floor(delta), "RPE: an interval in frames must be a whole number");
  // The estimate in timestamp order, each pose with its ground truth (or none).
  std::vector<std::size_t> order(est.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return est[a].timestamp < est[b].timestamp; });
  std::vector<long> gt_of(est.size(), -1);
  for (const auto& [e, g] : matched(gt, est, o)) gt_of[e] = static_cast<long>(g);
  std::vector<double> stamps(order.size());
  for (std::size_t k = 0; k < order.size(); ++k) stamps[k] = est[order[k]].timestamp;

  std::vector<double> et, er;
  const auto step = static_cast<std::size_t>(unit == DeltaUnit::kFrames ? delta : 0.0);
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::size_t j = 0;
    if (unit == DeltaUnit::kFrames) {
      j = i + step;
      if (j >= order.size()) break;
    } else {
      const double target = stamps[i] + delta;
      auto it = std::lower_bound(stamps.begin(), stamps.end(), target);
      std::size_t k = static_cast<std::size_t>(it - stamps.begin());
      if (k == stamps.size() || (k > 0 && target - stamps[k - 1] <= stamps[k] - target)) k = k > 0 ? k - 1 : 0;
      if (k <= i || std::fabs(stamps[k] - target) >= o.max_difference) continue;
      j = k;
    }
    const long gi = gt_of[order[i]], gj = gt_of[order[j]];
    if (gi < 0 || gj < 0) continue;
    const Eigen::Isometry3d q = gt[static_cast<std::size_t>(gi)].pose.inverse() * gt[static_cast<std::size_t>(gj)].pose;
    const Eigen::Isometry3d p = est[order[i]].pose.inverse() * est[order[j]].pose;
    const Eigen::Isometry3d e = q.inverse() * p;
    et.push_back(e.translation().norm());
    er.push_back(rotation_angle_deg(e.linear()));
  }
  if (et.empty())
    throw DataError(where + ": no pose pair " + std::to_string(delta) +
                    (unit == DeltaUnit::kFrames ? " frames" : " s") +
                    " apart has ground truth at both ends; RPE cannot be computed");
  RpeResult r;
  r.delta = delta;
  r.unit = unit;
  r.translation = error_stats(et);
  r.rotation = error_stats(er);
  return r;
}

}  // namespace s3d::fusion
