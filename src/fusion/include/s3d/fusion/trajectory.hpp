#pragma once
// Camera trajectories and their evaluation, CPU only, double precision:
// - TUM RGB-D trajectory files (`timestamp tx ty tz qx qy qz qw`, camera to world, `#` comments) and the
//   4x4 pose text files of 7-Scenes (`frame-XXXXXX.pose.txt`, camera to world);
// - timestamp association as the TUM benchmark's `associate.py` does it;
// - the absolute trajectory error (ATE) after a Horn/Umeyama SE(3) or Sim(3) alignment, and the relative
//   pose error (RPE) per a number of frames or per a time interval (Sturm et al., "A Benchmark for the
//   Evaluation of RGB-D SLAM Systems", IROS 2012; the definitions used are in docs/ICP-FUSE.md).
// Every failure throws s3d::IoError (cannot read or write) or s3d::DataError (a line that does not parse,
// too few poses), whose what() is one line naming `file:line` where a line is at fault.
#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Geometry>

namespace s3d::fusion {

/// One pose of a trajectory: seconds, and the camera-to-world transform.
struct StampedPose {
  double timestamp = 0.0;
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
};

/// Poses in file order (not re-sorted: association and RPE sort what they need).
using Trajectory = std::vector<StampedPose>;

/// Parses TUM trajectory text. Blank lines and lines starting with `#` (after blanks) are skipped; every
/// other line must hold exactly 8 finite numbers `t tx ty tz qx qy qz qw` (blanks or commas between them),
/// with a quaternion of norm in [0.9, 1.1] (it is then normalised). `name` starts the error messages.
/// @throws DataError "`name`:LINE: what is wrong".
Trajectory parse_tum_trajectory(const std::string& text, const std::string& name);
/// Reads a TUM trajectory file. @throws IoError (cannot open), DataError (see parse_tum_trajectory).
Trajectory read_tum_trajectory(const std::string& path);
/// The TUM text of `trajectory`: one line per pose, timestamp with 6 decimals, translation and quaternion
/// with 9 significant digits after the point (`%.9f`), quaternion with qw >= 0, no header.
std::string format_tum_trajectory(const Trajectory& trajectory);
/// The KITTI odometry poses text of `trajectory`: one line per pose, the first three rows of its 4x4
/// camera-to-world matrix, row by row (12 numbers, `%.9e`), no timestamps.
std::string format_kitti_poses(const Trajectory& trajectory);
/// Writes format_tum_trajectory to `path` (not atomically: the CLI stages it through its frame).
/// @throws IoError naming `path`.
void write_tum_trajectory(const std::string& path, const Trajectory& trajectory);

/// Reads a 4x4 homogeneous pose matrix as 16 numbers of text (7-Scenes `frame-XXXXXX.pose.txt`,
/// camera to world). The last row must be 0 0 0 1 (within 1e-6) and the rotation orthonormal within 1e-3;
/// the rotation is then re-orthonormalised. @throws IoError, DataError naming `path`.
Eigen::Isometry3d read_pose_matrix(const std::string& path);

/// The poses' positions (x, y, z), in order.
std::vector<std::array<double, 3>> positions(const Trajectory& trajectory);

/// Timestamp association of TUM `associate.py`: every pair (i, j) with |a[i] - (b[j] + offset)| <
/// `max_difference` is a candidate; candidates are taken greedily by increasing |difference| (ties: by
/// a[i], then b[j]), each index used at most once. Returns (i, j) pairs sorted by i.
std::vector<std::pair<std::size_t, std::size_t>> associate(const std::vector<double>& a, const std::vector<double>& b,
                                                           double offset = 0.0, double max_difference = 0.02);

/// A similarity transform x -> scale * rotation * x + translation.
struct Alignment {
  Eigen::Matrix3d rotation = Eigen::Matrix3d::Identity();
  Eigen::Vector3d translation = Eigen::Vector3d::Zero();
  double scale = 1.0;
};

/// The closed-form least-squares alignment of `model` onto `data` (3 x n each, n >= 3 for a unique rotation;
/// n >= 1 accepted): minimises sum |c R model_i + t - data_i|^2 (Umeyama 1991; with `with_scale` false, c = 1,
/// Horn 1987). Sigma = (1/n) sum (d_i - d_mean)(m_i - m_mean)^T = U D V^T, S = diag(1, 1, det(U) det(V)),
/// R = U S V^T, c = tr(D S) / sigma_m^2, t = d_mean - c R m_mean. @throws InvalidArgument on n = 0 or a
/// size mismatch.
Alignment align_umeyama(const Eigen::Matrix3Xd& model, const Eigen::Matrix3Xd& data, bool with_scale = false);

/// Summary statistics of a list of errors.
struct ErrorStats {
  std::size_t count = 0;
  double rmse = 0.0;
  double mean = 0.0;
  double median = 0.0;  ///< the middle value; the mean of the two middle values for an even count
  double max = 0.0;
  double min = 0.0;
};
/// @returns all zero for an empty list.
ErrorStats error_stats(std::vector<double> errors);

/// What evaluate_ate and evaluate_rpe match and align.
struct EvalOptions {
  double max_difference = 0.02;  ///< seconds, association window (TUM default)
  double offset = 0.0;           ///< seconds added to the estimate's timestamps before association
  bool with_scale = false;       ///< ATE: Sim(3) alignment (evo `-as`) instead of SE(3) (TUM, evo `-a`)
  /// ATE only: the estimate's poses [first_index, last_index) (indices into the estimate in file order)
  /// take part, aligned on their own. Default: all.
  std::size_t first_index = 0;
  std::size_t last_index = std::numeric_limits<std::size_t>::max();
};

/// The absolute trajectory error: the estimate's positions aligned onto the ground truth's (associated
/// by timestamp), then the distances |c R p_i + t - q_i| in metres.
struct AteResult {
  ErrorStats error;                         ///< metres, one value per associated pose
  Alignment alignment;                      ///< estimate -> ground truth
  std::vector<double> errors;               ///< per associated pose, in estimate order
  std::vector<std::size_t> estimate_index;  ///< which estimate pose each error belongs to
};
/// @throws DataError when fewer than 3 poses associate (`where` names the files in the message).
AteResult evaluate_ate(const Trajectory& ground_truth, const Trajectory& estimate, const EvalOptions& options = {},
                       const std::string& where = "trajectory");

/// The unit of an RPE interval.
enum class DeltaUnit { kFrames, kSeconds };

/// The relative pose error over pairs (i, j) of the estimate (in timestamp order): with kFrames, j = i + delta;
/// with kSeconds, j is the pose whose timestamp is closest to t_i + delta, used only when it is within
/// max_difference of it and j > i. Each end must have an associated ground-truth pose (as for ATE, P =
/// estimate, Q = ground truth); E = (Q_i^-1 Q_j)^-1 (P_i^-1 P_j); translational error |trans(E)| in metres,
/// rotational error arccos((tr R_E - 1) / 2) in degrees. No alignment is needed (relative motions).
struct RpeResult {
  double delta = 1.0;
  DeltaUnit unit = DeltaUnit::kFrames;
  ErrorStats translation;  ///< metres
  ErrorStats rotation;     ///< degrees
};
/// @throws DataError when no pair can be formed; InvalidArgument for delta <= 0 (or a non-integer frame count).
RpeResult evaluate_rpe(const Trajectory& ground_truth, const Trajectory& estimate, double delta, DeltaUnit unit,
                       const EvalOptions& options = {}, const std::string& where = "trajectory");

}  // namespace s3d::fusion
