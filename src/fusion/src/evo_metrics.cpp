// evo's APE and RPE (s3d/fusion/evo_metrics.hpp; evo.core.sync, evo.core.metrics, evo.core.filters).
#include "s3d/fusion/evo_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "s3d/core/errors.hpp"

namespace s3d::fusion::evo {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// evo `sync.matching_time_indices`: for each of `shorter`, the nearest of `longer` within max_difference (over
/// sorted `longer`, an exact tie goes to the earlier one; unsorted, the first nearest). Returns (shorter index,
/// longer index) pairs.
std::vector<std::pair<std::size_t, std::size_t>> match_nearest(const std::vector<double>& shorter,
                                                               const std::vector<double>& longer,
                                                               double max_difference) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (longer.empty()) return out;
  if (!std::is_sorted(longer.begin(), longer.end())) {
    for (std::size_t i = 0; i < shorter.size(); ++i) {
      std::size_t best = 0;
      for (std::size_t j = 1; j < longer.size(); ++j)
        if (std::fabs(longer[j] - shorter[i]) < std::fabs(longer[best] - shorter[i])) best = j;
      if (std::fabs(longer[best] - shorter[i]) <= max_difference) out.emplace_back(i, best);
    }
    return out;
  }
  for (std::size_t i = 0; i < shorter.size(); ++i) {
    const double s = shorter[i];
    if (s < longer.front() - max_difference || s > longer.back() + max_difference) continue;
    std::size_t j = static_cast<std::size_t>(std::upper_bound(longer.begin(), longer.end(), s) - longer.begin());
    if (j >= longer.size()) j = longer.size() - 1;
    const double above = longer[j] - s;
    const double below = j > 0 ? s - longer[j - 1] : INFINITY;
    if (above <= max_difference && above < below)
      out.emplace_back(i, j);
    else if (below <= max_difference && below <= above)
      out.emplace_back(i, j - 1);
  }
  return out;
}

std::vector<double> stamps_of(const Trajectory& t) {
  std::vector<double> s(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) s[i] = t[i].timestamp;
  return s;
}

/// evo's `rotation angle` (the norm of SO(3)'s logarithm), radians.
double rotation_angle(const Eigen::Matrix3d& r) {
  return Eigen::AngleAxisd(Eigen::Quaterniond(r).normalized()).angle();
}

double pose_error(const Eigen::Matrix4d& e, PoseRelation relation) {
  switch (relation) {
    case PoseRelation::kTranslationPart:
      return e.block<3, 1>(0, 3).norm();
    case PoseRelation::kRotationPart:
      return (e.block<3, 3>(0, 0) - Eigen::Matrix3d::Identity()).norm();
    case PoseRelation::kRotationAngleDeg:
      return rotation_angle(e.block<3, 3>(0, 0)) * 180.0 / kPi;
    case PoseRelation::kRotationAngleRad:
      return rotation_angle(e.block<3, 3>(0, 0));
    case PoseRelation::kFull:
      return (e - Eigen::Matrix4d::Identity()).norm();
  }
  return 0.0;
}

const char* relation_name(PoseRelation r) {
  switch (r) {
    case PoseRelation::kTranslationPart:
      return "translation part";
    case PoseRelation::kRotationPart:
      return "rotation part";
    case PoseRelation::kRotationAngleDeg:
      return "rotation angle in degrees";
    case PoseRelation::kRotationAngleRad:
      return "rotation angle in radians";
    case PoseRelation::kFull:
      return "full transformation";
  }
  return "";
}

const char* unit_name(PoseRelation r) {
  switch (r) {
    case PoseRelation::kTranslationPart:
      return "m";
    case PoseRelation::kRotationAngleDeg:
      return "deg";
    case PoseRelation::kRotationAngleRad:
      return "rad";
    default:
      return "unit-less";
  }
}

const char* alignment_suffix(Alignment a) {
  switch (a) {
    case Alignment::kSE3:
      return "\n(with SE(3) Umeyama alignment)";
    case Alignment::kSim3:
      return "\n(with Sim(3) Umeyama alignment)";
    case Alignment::kNone:
      return "\n(not aligned)";
  }
  return "";
}

/// Python's repr of a float (the shortest text that reads back as `v`), as evo's titles print a delta.
std::string python_float(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

Eigen::Matrix4d matrix(const Eigen::Isometry3d& p) { return p.matrix(); }

/// The associated trajectories, the estimate aligned onto the reference (evo's `traj_est.align`).
struct Synced {
  Trajectory reference, estimate;
  Eigen::Matrix4d alignment = Eigen::Matrix4d::Identity();
};

Synced synced(const Trajectory& reference, const Trajectory& estimate, Alignment alignment, double max_difference,
              std::size_t minimum, const std::string& where) {
  Synced s;
  for (const auto& [e, r] : associate(reference, estimate, max_difference, where)) {
    s.reference.push_back(reference[r]);
    s.estimate.push_back(estimate[e]);
  }
  if (s.estimate.size() < minimum)
    throw DataError(where + ": " + std::to_string(s.estimate.size()) + " poses associate within " +
                    python_float(max_difference) + " s; at least " + std::to_string(minimum) + " are needed");
  if (alignment == Alignment::kNone) return s;
  const std::size_t n = s.estimate.size();
  Eigen::Matrix3Xd model(3, n), data(3, n);
  for (std::size_t i = 0; i < n; ++i) {
    model.col(static_cast<Eigen::Index>(i)) = s.estimate[i].pose.translation();
    data.col(static_cast<Eigen::Index>(i)) = s.reference[i].pose.translation();
  }
  const fusion::Alignment a = align_umeyama(model, data, alignment == Alignment::kSim3);
  for (StampedPose& p : s.estimate) {
    Eigen::Isometry3d moved = Eigen::Isometry3d::Identity();
    moved.linear() = a.rotation * p.pose.linear();
    moved.translation() = a.rotation * (a.scale * p.pose.translation()) + a.translation;
    p.pose = moved;
  }
  s.alignment.block<3, 3>(0, 0) = a.scale * a.rotation;
  s.alignment.block<3, 1>(0, 3) = a.translation;
  return s;
}

std::vector<double> path_lengths(const Trajectory& t) {
  std::vector<double> d(t.size(), 0.0);
  for (std::size_t i = 1; i < t.size(); ++i)
    d[i] = d[i - 1] + (t[i].pose.translation() - t[i - 1].pose.translation()).norm();
  return d;
}

void fill_times(Result& r, const Trajectory& estimate_at_errors, const Trajectory& estimate_all,
                const std::vector<double>& reference_distances, const std::vector<double>& estimate_distances) {
  const double first = estimate_all.empty() ? 0.0 : estimate_all.front().timestamp;
  for (const StampedPose& p : estimate_at_errors) {
    r.timestamps.push_back(p.timestamp);
    r.seconds_from_start.push_back(p.timestamp - first);
  }
  r.distances_from_start = reference_distances;
  r.distances = estimate_distances;
}

}  // namespace

Alignment parse_alignment(const std::string& name) {
  if (name == "none") return Alignment::kNone;
  if (name == "se3") return Alignment::kSE3;
  if (name == "sim3") return Alignment::kSim3;
  throw InvalidArgument("alignment '" + name + "': expected none, se3 or sim3");
}

PoseRelation parse_pose_relation(const std::string& name) {
  if (name == "trans_part") return PoseRelation::kTranslationPart;
  if (name == "rot_part") return PoseRelation::kRotationPart;
  if (name == "angle_deg") return PoseRelation::kRotationAngleDeg;
  if (name == "angle_rad") return PoseRelation::kRotationAngleRad;
  if (name == "full") return PoseRelation::kFull;
  throw InvalidArgument("pose relation '" + name + "': expected trans_part, rot_part, angle_deg, angle_rad or full");
}

DeltaUnit parse_delta_unit(const std::string& name) {
  if (name == "f") return DeltaUnit::kFrames;
  if (name == "m") return DeltaUnit::kMeters;
  throw InvalidArgument("delta unit '" + name + "': expected f (frames) or m (metres)");
}

Statistics statistics(const std::vector<double>& errors) {
  S3D_EXPECTS(!errors.empty(), "evo::statistics: no errors");
  Statistics s;
  const double n = static_cast<double>(errors.size());
  double sum = 0.0;
  for (double e : errors) sum += e, s.sse += e * e;
  s.mean = sum / n;
  s.rmse = std::sqrt(s.sse / n);
  double var = 0.0;
  for (double e : errors) var += (e - s.mean) * (e - s.mean);
  s.std = std::sqrt(var / n);
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t m = sorted.size();
  s.median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
  s.min = sorted.front();
  s.max = sorted.back();
  return s;
}

std::vector<std::pair<std::size_t, std::size_t>> associate(const Trajectory& reference, const Trajectory& estimate,
                                                           double max_difference, const std::string& where) {
  const std::vector<double> ref = stamps_of(reference), est = stamps_of(estimate);
  // evo: the trajectory with fewer poses looks up the other (the estimate when both are as long).
  const bool estimate_shorter = !(ref.size() < est.size());
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (estimate_shorter) {
    out = match_nearest(est, ref, max_difference);
  } else {
    for (const auto& [r, e] : match_nearest(ref, est, max_difference)) out.emplace_back(e, r);
  }
  if (out.empty()) throw DataError(where + ": no timestamps associate within " + python_float(max_difference) + " s");
  return out;
}

Result ape(const Trajectory& reference, const Trajectory& estimate, PoseRelation relation, Alignment alignment,
           double max_difference, const std::string& where) {
  const Synced s = synced(reference, estimate, alignment, max_difference, alignment == Alignment::kNone ? 1 : 3, where);
  Result r;
  r.title = std::string("APE w.r.t. ") + relation_name(relation) + " (" + unit_name(relation) + ")" +
            alignment_suffix(alignment);
  r.label = std::string("APE (") + unit_name(relation) + ")";
  for (std::size_t i = 0; i < s.estimate.size(); ++i) {
    const Eigen::Matrix4d e = matrix(s.estimate[i].pose).inverse() * matrix(s.reference[i].pose);
    r.errors.push_back(relation == PoseRelation::kTranslationPart
                           ? (s.estimate[i].pose.translation() - s.reference[i].pose.translation()).norm()
                           : pose_error(e, relation));
  }
  r.stats = statistics(r.errors);
  fill_times(r, s.estimate, s.estimate, path_lengths(s.reference), path_lengths(s.estimate));
  r.reference = s.reference;
  r.estimate = s.estimate;
  r.alignment = s.alignment;
  r.aligned = alignment != Alignment::kNone;
  return r;
}

Result rpe(const Trajectory& reference, const Trajectory& estimate, PoseRelation relation, Alignment alignment,
           double delta, DeltaUnit unit, double max_difference, const std::string& where) {
  if (!(delta > 0.0)) throw InvalidArgument("RPE delta " + python_float(delta) + ": must be > 0");
  if (unit == DeltaUnit::kFrames && delta != std::floor(delta))
    throw InvalidArgument("RPE delta " + python_float(delta) + ": a frame count must be an integer");
  const Synced s = synced(reference, estimate, alignment, max_difference, alignment == Alignment::kNone ? 2 : 3, where);
  // evo: consecutive pairs of the estimate's poses, delta frames apart or where its path has grown by delta.
  std::vector<std::size_t> ids = {0};
  if (unit == DeltaUnit::kFrames) {
    const auto step = static_cast<std::size_t>(delta);
    for (std::size_t i = step; i < s.estimate.size(); i += step) ids.push_back(i);
  } else {
    double path = 0.0;
    for (std::size_t i = 1; i < s.estimate.size(); ++i) {
      path += (s.estimate[i].pose.translation() - s.estimate[i - 1].pose.translation()).norm();
      if (path >= delta) ids.push_back(i), path = 0.0;
    }
  }
  if (ids.size() < 2)
    throw DataError(where + ": RPE delta = " + python_float(delta) + (unit == DeltaUnit::kFrames ? " frames" : " m") +
                    " forms no pair of poses");
  Result r;
  const std::string delta_text =
      unit == DeltaUnit::kFrames ? std::to_string(static_cast<long long>(delta)) : python_float(delta);
  r.title = std::string("RPE w.r.t. ") + relation_name(relation) + " (" + unit_name(relation) +
            ")\nfor delta = " + delta_text + (unit == DeltaUnit::kFrames ? " (frames)" : " (m)") +
            " using consecutive pairs" + alignment_suffix(alignment);
  r.label = std::string("RPE (") + unit_name(relation) + ")";
  for (std::size_t k = 1; k < ids.size(); ++k) {
    const std::size_t i = ids[k - 1], j = ids[k];
    const Eigen::Matrix4d q = matrix(s.reference[i].pose).inverse() * matrix(s.reference[j].pose);
    const Eigen::Matrix4d p = matrix(s.estimate[i].pose).inverse() * matrix(s.estimate[j].pose);
    r.errors.push_back(pose_error(q.inverse() * p, relation));
  }
  r.stats = statistics(r.errors);
  for (std::size_t i : ids) {
    r.reference.push_back(s.reference[i]);
    r.estimate.push_back(s.estimate[i]);
  }
  const std::vector<double> ref_d = path_lengths(r.reference), est_d = path_lengths(r.estimate);
  fill_times(r, Trajectory(r.estimate.begin() + 1, r.estimate.end()), r.estimate,
             std::vector<double>(ref_d.begin() + 1, ref_d.end()), std::vector<double>(est_d.begin() + 1, est_d.end()));
  r.alignment = s.alignment;
  r.aligned = alignment != Alignment::kNone;
  return r;
}

std::string format_block(const Result& result) {
  std::string out = result.title + "\n\n";
  const std::pair<const char*, double> rows[] = {{"max", result.stats.max},       {"mean", result.stats.mean},
                                                 {"median", result.stats.median}, {"min", result.stats.min},
                                                 {"rmse", result.stats.rmse},     {"sse", result.stats.sse},
                                                 {"std", result.stats.std}};
  char line[96];
  for (const auto& [name, value] : rows) {
    std::snprintf(line, sizeof line, "%10s\t%.6f\n", name, value);
    out += line;
  }
  return out;
}

}  // namespace s3d::fusion::evo
