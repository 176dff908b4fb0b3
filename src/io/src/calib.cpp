#include "s3d/io/calib.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

#include "opencv_storage.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

// Calibrations are a few hundred bytes; a larger file is some other file given by mistake, not read whole.
constexpr std::uintmax_t kMaxCalibrationBytes = 1 << 20;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open calibration file");
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (!ec && bytes > kMaxCalibrationBytes)
    throw DataError(path + ": " + std::to_string(bytes) + " bytes, larger than any calibration file (1 MiB)");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Numbers that follow `key` in `text` (across line breaks), up to `count` of them.
bool numbers_after(const std::string& text, const std::string& key, int count, std::vector<double>* out) {
  std::size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string::npos) {
    // `key` must start a line (or the file) so that "P2:" does not match inside "P_rect_02:"-like keys.
    if (pos == 0 || text[pos - 1] == '\n' || text[pos - 1] == '\r') break;
    pos += key.size();
  }
  if (pos == std::string::npos) return false;
  std::istringstream in(text.substr(pos + key.size()));
  out->clear();
  double v = 0.0;
  while (static_cast<int>(out->size()) < count && in >> v) out->push_back(v);
  return static_cast<int>(out->size()) == count;
}

std::vector<double> all_numbers(const std::string& text, bool* only_numbers) {
  std::string t = text;
  for (char& c : t)
    if (c == ',' || c == ';' || c == '[' || c == ']') c = ' ';
  std::istringstream in(t);
  std::vector<double> v;
  std::string tok;
  *only_numbers = true;
  while (in >> tok) {
    try {
      std::size_t used = 0;
      v.push_back(std::stod(tok, &used));
      if (used != tok.size()) *only_numbers = false;
    } catch (const std::logic_error&) {
      *only_numbers = false;
    }
  }
  return v;
}

StereoCalibration from_q(const double q[16], const std::string& format, const std::string& source) {
  StereoCalibration c;
  c.cx = -q[3];
  c.cy = -q[7];
  c.focal_px = q[11];
  if (q[14] == 0.0) throw DataError(source + ": Q[3][2] is 0 (no baseline)");
  c.baseline_m = 1.0 / std::fabs(q[14]);
  c.doffs = q[15] / q[14];
  c.has_principal_point = true;
  c.source = source;
  c.format = format;
  return c;
}

StereoCalibration from_projections(const std::vector<double>& p2, const std::vector<double>& p3,
                                   const std::string& format, const std::string& source) {
  StereoCalibration c;
  c.focal_px = p2[0];
  c.cx = p2[2];
  c.cy = p2[6];
  if (c.focal_px == 0.0) throw DataError(source + ": focal length is 0");
  c.baseline_m = (p2[3] - p3[3]) / c.focal_px;
  c.doffs = p3[2] - p2[2];
  c.has_principal_point = true;
  c.source = source;
  c.format = format;
  return c;
}

// KITTI odometry's rectified projections without their labels: exactly two non-blank lines of 12 numbers each,
// P0 (left) then P1 (right), as some copies of a sequence ship calib.txt. Returns false for any other text;
// throws when the two lines are not a rectified pair (a third row other than 0 0 1, skew, another focal length
// in the right camera, or the right camera left of the left one).
bool unlabelled_projections(const std::string& text, const std::string& source, std::vector<double>* p0,
                            std::vector<double>* p1) {
  std::vector<std::vector<double>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bool only_numbers = false;
    std::vector<double> v = all_numbers(line, &only_numbers);
    if (!only_numbers || v.size() != 12 || rows.size() == 2) return false;
    rows.push_back(std::move(v));
  }
  if (rows.size() != 2) return false;
  for (std::size_t i = 0; i < 2; ++i) {
    const std::vector<double>& p = rows[i];
    const std::string which = source + ": line " + std::to_string(i + 1) + " (P" + std::to_string(i) + ")";
    for (double x : p)
      if (!std::isfinite(x)) throw DataError(which + ": not a finite number");
    if (p[8] != 0.0 || p[9] != 0.0 || p[10] != 1.0)
      throw DataError(which + ": not a rectified 3x4 projection (third row must be 0 0 1 t)");
    if (p[1] != 0.0 || p[4] != 0.0) throw DataError(which + ": projection with skew (not a rectified camera)");
  }
  if (rows[1][0] != rows[0][0] || rows[1][5] != rows[0][5] || rows[1][6] != rows[0][6])
    throw DataError(source + ": the two projections (P0, P1) are not a rectified pair (focal lengths or cy differ)");
  if (!(rows[1][3] < rows[0][3]))
    throw DataError(source +
                    ": line 2 (P1) must be the right camera's projection (P1[0][3] < P0[0][3]): the "
                    "lines are P0 (left) then P1 (right)");
  *p0 = std::move(rows[0]);
  *p1 = std::move(rows[1]);
  return true;
}

// key=value / key: value pairs. Returns false when no pair was found.
bool parse_pairs(const std::string& text, std::map<std::string, double>* kv) {
  static const std::regex re(R"(([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*([-+0-9.eE]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    try {
      (*kv)[(*it)[1].str()] = std::stod((*it)[2].str());
    } catch (const std::logic_error&) {
    }
  }
  return !kv->empty();
}

bool from_pairs(const std::map<std::string, double>& kv, const std::string& format, const std::string& source,
                StereoCalibration* c) {
  auto get = [&](std::initializer_list<const char*> names, double* v) {
    for (const char* n : names) {
      auto it = kv.find(n);
      if (it != kv.end()) {
        *v = it->second;
        return true;
      }
    }
    return false;
  };
  if (!get({"focal_px", "focal", "f", "fx"}, &c->focal_px)) return false;
  if (!get({"baseline_m", "baseline", "b"}, &c->baseline_m)) return false;
  const bool has_cx = get({"cx"}, &c->cx);
  const bool has_cy = get({"cy"}, &c->cy);
  c->has_principal_point = has_cx && has_cy;
  get({"doffs"}, &c->doffs);
  c->source = source;
  c->format = format;
  return true;
}

// Whether `spec` names a file; an inline spec is often no valid path at all (longer than NAME_MAX: the
// throwing std::filesystem::exists raises filesystem_error there).
bool is_existing_file(const std::string& spec) {
  std::error_code ec;
  return std::filesystem::exists(spec, ec);
}

// An image size given in a calibration (`width=`, `height=`): a whole number in int's range, 0 = unknown.
int image_size(double value, const char* key, const std::string& source) {
  if (!(value >= 0.0 && value <= 1e9) || value != std::floor(value))
    throw DataError(source + ": " + key + " must be a whole number of pixels, 0 to 1e9");
  return static_cast<int>(value);
}

// OpenCV FileStorage YAML/XML (stereoRectify's Q, or P1 and P2, or focal_px/baseline_m/cx/cy/doffs numbers),
// read by our own strict reader: OpenCV's parser is not safe on hostile files.
StereoCalibration from_opencv_storage(const std::string& text, const std::string& path) {
  const std::map<std::string, opencv_storage::Entry> entries =
      opencv_storage::read(text, {"Q", "P1", "P2", "focal_px", "baseline_m", "cx", "cy", "doffs"}, path);
  auto matrix = [&](const char* key, int rows, int cols) -> const opencv_storage::Entry* {
    const auto it = entries.find(key);
    if (it == entries.end()) return nullptr;
    if (!it->second.matrix || it->second.rows != rows || it->second.cols != cols)
      throw DataError(path + ": line " + std::to_string(it->second.line) + ": " + key + " must be a " +
                      std::to_string(rows) + "x" + std::to_string(cols) + " matrix");
    return &it->second;
  };
  if (const opencv_storage::Entry* q = matrix("Q", 4, 4)) return from_q(q->values.data(), "Q", path);
  const opencv_storage::Entry* p1 = matrix("P1", 3, 4);
  const opencv_storage::Entry* p2 = matrix("P2", 3, 4);
  if (p1 != nullptr && p2 != nullptr) return from_projections(p1->values, p2->values, "P1P2", path);
  std::map<std::string, double> kv;
  for (const auto& [key, entry] : entries) {
    if (entry.matrix) throw DataError(path + ": line " + std::to_string(entry.line) + ": " + key + " must be a number");
    kv[key] = entry.values[0];
  }
  StereoCalibration c;
  if (from_pairs(kv, "yaml", path, &c)) return c;
  throw DataError(path + ": no Q, P1/P2 or focal_px/baseline_m in this calibration file");
}

}  // namespace

StereoCalibration read_calibration(const std::string& spec) {
  StereoCalibration c;
  if (!is_existing_file(spec)) {
    std::map<std::string, double> kv;
    if (parse_pairs(spec, &kv) && from_pairs(kv, "inline", spec, &c) && spec.find('/') == std::string::npos) {
      c.validate();
      return c;
    }
    throw IoError(spec + ": no such calibration file");
  }
  std::string ext = std::filesystem::path(spec).extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string text = read_text(spec);
  if (ext == ".yml" || ext == ".yaml" || ext == ".xml" || opencv_storage::looks_like(text)) {
    c = from_opencv_storage(text, spec);
  } else if (text.find("P_rect_02") != std::string::npos || text.find("P_rect_03") != std::string::npos) {
    std::vector<double> p2, p3;
    if (!numbers_after(text, "P_rect_02:", 12, &p2) || !numbers_after(text, "P_rect_03:", 12, &p3))
      throw DataError(spec + ": KITTI calibration needs 12 numbers after both P_rect_02: and P_rect_03:");
    c = from_projections(p2, p3, "kitti", spec);
  } else if (text.find("P2:") != std::string::npos && text.find("P3:") != std::string::npos) {
    std::vector<double> p2, p3;
    if (!numbers_after(text, "P2:", 12, &p2) || !numbers_after(text, "P3:", 12, &p3))
      throw DataError(spec + ": KITTI calibration needs 12 numbers after both P2: and P3:");
    c = from_projections(p2, p3, "kitti", spec);
  } else if (text.find("P0:") != std::string::npos && text.find("P1:") != std::string::npos) {
    // KITTI odometry's grey pair (image_0 / image_1) when the file has no P2/P3 (those win above).
    std::vector<double> p0, p1;
    if (!numbers_after(text, "P0:", 12, &p0) || !numbers_after(text, "P1:", 12, &p1))
      throw DataError(spec + ": KITTI calibration needs 12 numbers after both P0: and P1:");
    c = from_projections(p0, p1, "kitti", spec);
  } else if (std::vector<double> p0, p1; unlabelled_projections(text, spec, &p0, &p1)) {
    c = from_projections(p0, p1, "kitti", spec);
  } else if (text.find("cam0=") != std::string::npos) {
    std::vector<double> cam0;
    if (!numbers_after(text, "cam0=[", 9, &cam0)) {
      // numbers_after stops at ';' separators: strip them and retry on a cleaned copy.
      std::string t = text;
      for (char& ch : t)
        if (ch == ';' || ch == ']') ch = ' ';
      if (!numbers_after(t, "cam0=[", 9, &cam0))
        throw DataError(spec + ": cannot parse cam0=[...] (Middlebury calib.txt)");
    }
    std::map<std::string, double> kv;
    parse_pairs(text, &kv);
    if (!kv.count("baseline")) throw DataError(spec + ": Middlebury calib.txt without baseline=");
    c.focal_px = cam0[0];
    c.cx = cam0[2];
    c.cy = cam0[5];
    c.baseline_m = kv["baseline"] / 1000.0;  // Middlebury gives millimetres
    c.doffs = kv.count("doffs") ? kv["doffs"] : 0.0;
    c.has_principal_point = true;
    c.source = spec;
    c.format = "middlebury";
  } else {
    bool only_numbers = false;
    const std::vector<double> v = all_numbers(text, &only_numbers);
    std::map<std::string, double> kv;
    if (only_numbers && v.size() == 16) {
      c = from_q(v.data(), "Q", spec);
    } else if (parse_pairs(text, &kv) && from_pairs(kv, "pairs", spec, &c)) {
    } else {
      throw DataError(spec +
                      ": unknown calibration format (expected KITTI P_rect_02/03, P2/P3, P0/P1 or two "
                      "unlabelled lines of 12 numbers (P0, P1), a 4x4 Q matrix, "
                      "OpenCV YAML, Middlebury calib.txt, or focal_px=/baseline_m=)");
    }
  }
  if (c.source.empty()) c.source = spec;
  c.validate();
  return c;
}

PinholeIntrinsics tum_depth_intrinsics() {
  PinholeIntrinsics k;
  k.fx = k.fy = 525.0;
  k.cx = 319.5;
  k.cy = 239.5;
  k.width = 640;
  k.height = 480;
  k.source = kTumDepthIntrinsics;
  return k;
}

PinholeIntrinsics read_intrinsics(const std::string& spec, int width, int height) {
  if (spec == kTumDepthIntrinsics) {  // the name, even where a file has it (that one is ./tum)
    PinholeIntrinsics k = tum_depth_intrinsics();
    if ((width > 0 && width != k.width) || (height > 0 && height != k.height))
      throw DataError(spec + ": TUM RGB-D's depth intrinsics are for 640x480 images, these are " +
                      std::to_string(width) + "x" + std::to_string(height) + " (pass --intrinsics fx,fy,cx,cy)");
    return k;
  }
  PinholeIntrinsics k;
  k.source = spec;
  k.width = width;
  k.height = height;
  const bool is_file = is_existing_file(spec);
  const std::string text = is_file ? read_text(spec) : spec;
  // "fx fy cx cy" after optional '#' comment lines (TUM/ICL give them this way).
  std::string numbers_only;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find('#') != 0) numbers_only += line + "\n";
  bool only_numbers = false;
  const std::vector<double> v = all_numbers(numbers_only, &only_numbers);
  std::map<std::string, double> kv;
  if (only_numbers && v.size() == 4) {
    k.fx = v[0];
    k.fy = v[1];
    k.cx = v[2];
    k.cy = v[3];
  } else if (only_numbers && v.size() == 9 && v[6] == 0.0 && v[7] == 0.0 && v[8] == 1.0) {
    // A 3x3 camera matrix K = [fx 0 cx; 0 fy cy; 0 0 1] (7-Scenes camera-intrinsics.txt).
    if (v[1] != 0.0 || v[3] != 0.0) throw DataError(spec + ": camera matrix with skew (not a pinhole model)");
    k.fx = v[0];
    k.fy = v[4];
    k.cx = v[2];
    k.cy = v[5];
  } else if (parse_pairs(text, &kv) && kv.count("fx") && kv.count("fy") && kv.count("cx") && kv.count("cy")) {
    k.fx = kv["fx"];
    k.fy = kv["fy"];
    k.cx = kv["cx"];
    k.cy = kv["cy"];
    if (kv.count("width") && width == 0) k.width = image_size(kv["width"], "width", spec);
    if (kv.count("height") && height == 0) k.height = image_size(kv["height"], "height", spec);
  } else if (is_file) {
    StereoCalibration stereo;
    try {
      stereo = read_calibration(spec);
    } catch (const DataError&) {
      throw DataError(spec + ": no intrinsics (expected \"fx fy cx cy\", fx=/fy=/cx=/cy=, or a stereo calibration)");
    }
    if (!stereo.has_principal_point && (width <= 0 || height <= 0))
      throw DataError(spec + ": calibration has no principal point and the image size is not known");
    k = geometry::left_intrinsics(stereo, width, height);
  } else {
    throw IoError(spec + ": no such intrinsics file");
  }
  k.validate();
  return k;
}

std::string shortest_number(double v) {
  char buf[40];
  int digits = 1;
  for (; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (!std::isfinite(v) || std::strtod(buf, nullptr) == v) break;
  }
  // %g turns to an exponent when the whole part has more digits than the precision (3e+02): print them all.
  if (std::isfinite(v) && std::fabs(v) >= 1.0 && std::fabs(v) < 1e15) {
    const int whole = static_cast<int>(std::floor(std::log10(std::fabs(v)))) + 1;
    if (whole > digits) std::snprintf(buf, sizeof buf, "%.*g", whole, v);
  }
  return buf;
}

std::string format_camera_matrix(const PinholeIntrinsics& k) {
  return shortest_number(k.fx) + " 0 " + shortest_number(k.cx) + "\n0 " + shortest_number(k.fy) + " " +
         shortest_number(k.cy) + "\n0 0 1\n";
}

}  // namespace s3d::io
