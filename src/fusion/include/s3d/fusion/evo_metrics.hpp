#pragma once
// Trajectory metrics as evo computes and prints them (MichaelGrupp/evo, `evo_ape` / `evo_rpe` on TUM files), so
// that a figure s3d prints can be put beside any other system's evo output: the same association of
// timestamps, the same Umeyama alignment, the same error per pose relation, the same statistics and the same
// text block. Definitions (docs/ICP-FUSE.md, "Evaluation"):
// - Association (evo `sync.associate_trajectories`, nearest timestamp): each pose of the trajectory with fewer
//   poses (the estimate on a tie) takes the nearest pose of the other (ties to the earlier one; the first
//   nearest when that one's stamps are not sorted) when it is at most `max_difference` (evo's default 0.01 s)
//   away; both lists keep the shorter one's order.
// - Alignment (evo `-a`, `-as`): Umeyama's closed form on the associated positions, the estimate moved onto
//   the reference (a Sim(3) scales the estimate's positions first).
// - APE of pose i: E = P_i^-1 Q_i (P aligned estimate, Q reference); RPE of a pair (i, j):
//   E = (Q_i^-1 Q_j)^-1 (P_i^-1 P_j), pairs of consecutive indices delta frames apart, or cut where the
//   estimate's path has grown by delta metres (evo's `filter_pairs_by_path`). The error is |t(E)| (translation
//   part), |R(E) - I|_F (rotation part), the angle of R(E) (degrees or radians) or |E - I|_F (full).
// - Statistics: max, mean, median (the mean of the middle two for an even count), min, rmse, sse (sum of
//   squares), std (population).
#include <cstddef>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "s3d/fusion/trajectory.hpp"

namespace s3d::fusion::evo {

/// evo `--align` / `--correct_scale`: none, SE(3) (`-a`, the TUM benchmark's), Sim(3) (`-as`, monocular scale).
enum class Alignment { kNone, kSE3, kSim3 };
/// evo `--pose_relation`.
enum class PoseRelation { kTranslationPart, kRotationPart, kRotationAngleDeg, kRotationAngleRad, kFull };
/// evo `--delta_unit` of the RPE: frames (`f`) or metres of the estimate's path (`m`).
enum class DeltaUnit { kFrames, kMeters };

/// Parses evo's names: `none|se3|sim3`; `trans_part|rot_part|angle_deg|angle_rad|full`; `f|m`.
/// @throws InvalidArgument naming the value and the accepted ones.
Alignment parse_alignment(const std::string& name);
PoseRelation parse_pose_relation(const std::string& name);
DeltaUnit parse_delta_unit(const std::string& name);

struct Statistics {
  double max = 0.0, mean = 0.0, median = 0.0, min = 0.0, rmse = 0.0, sse = 0.0, std = 0.0;
};
/// @throws InvalidArgument for an empty list.
Statistics statistics(const std::vector<double>& errors);

/// One metric over one pair of trajectories: what evo's result object (`evo.core.result.Result`) holds.
struct Result {
  std::string title;  ///< evo's info["title"], e.g. "APE w.r.t. translation part (m)\n(with SE(3) Umeyama alignment)"
  std::string label;  ///< evo's info["label"], e.g. "APE (m)"
  std::vector<double> errors;  ///< one per associated pose (APE) or per pair (RPE): evo's error_array
  Statistics stats;
  /// The estimate's timestamps of the errors (RPE: of each pair's second pose), and seconds from the first.
  std::vector<double> timestamps, seconds_from_start;
  /// Path lengths from the first pose, reference and estimate, at the same poses as `timestamps`.
  std::vector<double> distances_from_start, distances;
  /// The associated trajectories (the estimate aligned): evo's stored reference and estimate. For the RPE,
  /// the first pose and the pairs' second poses.
  Trajectory reference, estimate;
  Eigen::Matrix4d alignment = Eigen::Matrix4d::Identity();  ///< estimate -> reference, Sim(3); kNone: identity
  bool aligned = false;                                     ///< an alignment was computed (evo writes it then)
};

/// The associated pairs (estimate index, reference index) in evo's order. @throws DataError (`where` names the
/// trajectories) when none associate.
std::vector<std::pair<std::size_t, std::size_t>> associate(const Trajectory& reference, const Trajectory& estimate,
                                                           double max_difference, const std::string& where);

/// evo_ape. @throws DataError when fewer than 3 poses associate (an alignment needs 3; 1 without one).
Result ape(const Trajectory& reference, const Trajectory& estimate, PoseRelation relation, Alignment alignment,
           double max_difference = 0.01, const std::string& where = "trajectory");
/// evo_rpe over consecutive pairs. @throws DataError when no pair forms; InvalidArgument for delta <= 0 or a
/// non-integer frame count.
Result rpe(const Trajectory& reference, const Trajectory& estimate, PoseRelation relation, Alignment alignment,
           double delta, DeltaUnit unit, double max_difference = 0.01, const std::string& where = "trajectory");

/// The block evo prints for `result`: the title, an empty line, then `{name:>10}\t{value:.6f}` for max, mean,
/// median, min, rmse, sse, std (each line ends with a newline).
std::string format_block(const Result& result);

}  // namespace s3d::fusion::evo
