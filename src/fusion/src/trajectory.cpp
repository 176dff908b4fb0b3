// TUM trajectory text, 7-Scenes 4x4 pose files, and associate.py's timestamp matching.
#include "s3d/fusion/trajectory.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include "s3d/core/errors.hpp"

namespace s3d::fusion {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw IoError(path + ": read failed");
  return s.str();
}

/// Splits on blanks and commas; parses every token as a finite double. Returns false (with `bad` set to
/// the offending token) on anything else.
bool parse_numbers(const std::string& line, std::vector<double>* out, std::string* bad) {
  std::string t = line;
  for (char& c : t)
    if (c == ',' || c == '\t' || c == '\r') c = ' ';
  std::istringstream in(t);
  std::string tok;
  while (in >> tok) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(tok.c_str(), &end);
    if (end != tok.c_str() + tok.size() || errno == ERANGE || !std::isfinite(v)) {
      *bad = tok;
      return false;
    }
    out->push_back(v);
  }
  return true;
}

}  // namespace

Trajectory parse_tum_trajectory(const std::string& text, const std::string& name) {
  Trajectory trajectory;
  std::istringstream lines(text);
  std::size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = name + ":" + std::to_string(number) + ": ";
    std::vector<double> v;
    std::string bad;
    if (!parse_numbers(line, &v, &bad)) throw DataError(where + "`" + bad + "` is not a finite number");
    if (v.size() != 8)
      throw DataError(where + "expected 8 numbers `timestamp tx ty tz qx qy qz qw`, found " + std::to_string(v.size()));
    Eigen::Quaterniond q(v[7], v[4], v[5], v[6]);  // Eigen's constructor takes w first
    const double norm = q.norm();
    if (!(norm >= 0.9 && norm <= 1.1))
      throw DataError(where + "quaternion norm " + std::to_string(norm) + " is not 1 (expected qx qy qz qw)");
    q.normalize();
    StampedPose p;
    p.timestamp = v[0];
    p.pose.linear() = q.toRotationMatrix();
    p.pose.translation() = Eigen::Vector3d(v[1], v[2], v[3]);
    trajectory.push_back(p);
  }
  return trajectory;
}

Trajectory read_tum_trajectory(const std::string& path) { return parse_tum_trajectory(read_text(path), path); }

std::string format_kitti_poses(const Trajectory& trajectory) {
  std::string out;
  char buf[256];
  for (const StampedPose& p : trajectory) {
    const Eigen::Matrix4d m = p.pose.matrix();
    int n = 0;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), "%s%.9e", n ? " " : "", m(r, c));
    out += buf;
    out += '\n';
  }
  return out;
}

std::string format_tum_trajectory(const Trajectory& trajectory) {
  std::string out;
  char buf[256];
  for (const auto& p : trajectory) {
    Eigen::Quaterniond q(Eigen::Matrix3d(p.pose.linear()));
    q.normalize();
    if (q.w() < 0.0) q.coeffs() = -q.coeffs();  // one sign for the same rotation: qw >= 0
    const Eigen::Vector3d t = p.pose.translation();
    std::snprintf(buf, sizeof buf, "%.6f %.9f %.9f %.9f %.9f %.9f %.9f %.9f\n", p.timestamp, t.x(), t.y(), t.z(), q.x(),
                  q.y(), q.z(), q.w());
    out += buf;
  }
  return out;
}

void write_tum_trajectory(const std::string& path, const Trajectory& trajectory) {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  if (!out) throw io_error_with_reason(path, "cannot create");
  const std::string text = format_tum_trajectory(trajectory);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw io_error_with_reason(path, "write failed");
}

Eigen::Isometry3d read_pose_matrix(const std::string& path) {
  const std::string text = read_text(path);
  std::vector<double> v;
  std::string bad;
  if (!parse_numbers(text, &v, &bad)) throw DataError(path + ": `" + bad + "` is not a finite number");
  if (v.size() != 16) throw DataError(path + ": expected a 4x4 matrix (16 numbers), found " + std::to_string(v.size()));
  Eigen::Matrix4d m;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) m(r, c) = v[static_cast<std::size_t>(4 * r + c)];
  if ((m.row(3) - Eigen::RowVector4d(0, 0, 0, 1)).cwiseAbs().maxCoeff() > 1e-6)
    throw DataError(path + ": the last row is not 0 0 0 1");
  const Eigen::Matrix3d r = m.topLeftCorner<3, 3>();
  if ((r.transpose() * r - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff() > 1e-3 || r.determinant() <= 0.0)
    throw DataError(path + ": the 3x3 block is not a rotation");
  // Nearest rotation (polar decomposition through the SVD) so that inverses stay exact.
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(r, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  pose.linear() = svd.matrixU() * svd.matrixV().transpose();
  pose.translation() = m.topRightCorner<3, 1>();
  return pose;
}

std::vector<std::pair<std::size_t, std::size_t>> associate(const std::vector<double>& a, const std::vector<double>& b,
                                                           double offset, double max_difference) {
  // Candidates within the window. Both lists are sorted by index of time so that each a[i] only scans the
  // b[j] near it; the greedy choice then runs over the candidates sorted by |difference|.
  std::vector<std::size_t> bi(b.size());
  for (std::size_t j = 0; j < b.size(); ++j) bi[j] = j;
  std::sort(bi.begin(), bi.end(), [&](std::size_t x, std::size_t y) { return b[x] + offset < b[y] + offset; });
  std::vector<double> bs(b.size());
  for (std::size_t k = 0; k < b.size(); ++k) bs[k] = b[bi[k]] + offset;
  std::vector<std::tuple<double, double, double, std::size_t, std::size_t>> candidates;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto k = static_cast<std::size_t>(std::lower_bound(bs.begin(), bs.end(), a[i] - max_difference) - bs.begin());
    for (; k < bs.size() && bs[k] <= a[i] + max_difference; ++k) {
      const double d = std::fabs(a[i] - bs[k]);
      if (d < max_difference) candidates.emplace_back(d, a[i], b[bi[k]], i, bi[k]);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  std::vector<char> used_a(a.size(), 0), used_b(b.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (const auto& [d, ta, tb, i, j] : candidates) {
    if (used_a[i] || used_b[j]) continue;
    used_a[i] = used_b[j] = 1;
    pairs.emplace_back(i, j);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

std::vector<std::array<double, 3>> positions(const Trajectory& trajectory) {
  std::vector<std::array<double, 3>> out;
  out.reserve(trajectory.size());
  for (const StampedPose& p : trajectory) {
    const Eigen::Vector3d t = p.pose.translation();
    out.push_back({t.x(), t.y(), t.z()});
  }
  return out;
}

}  // namespace s3d::fusion
