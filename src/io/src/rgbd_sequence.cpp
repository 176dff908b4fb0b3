// Listing the frames of a depth sequence (TUM, 7-Scenes, plain folders, list files) and reading one depth
// frame into metres.
#include "s3d/io/rgbd_sequence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include "s3d/core/errors.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/pfm.hpp"

namespace s3d::io {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const fs::path& folder, const std::string& p) {
  const fs::path path(p);
  return path.is_absolute() ? p : (folder / path).lexically_normal().string();
}

struct ListLine {
  bool has_time = false;
  double time = 0.0;
  std::string path;
  std::size_t number = 0;  ///< the line's number in the file (1-based)
};

/// TUM RGB-D's own depth lists open with this comment (then `# file: 'NAME.bag'`); their PNGs hold 5000
/// units per metre, where 7-Scenes copies with a depth.txt of their own (no such header) hold millimetres.
constexpr const char* kTumDepthHeader = "# depth maps";

/// `path` or `timestamp path` lines; `#` comments and blank lines skipped. A first token that reads as a
/// number followed by more text is a timestamp (TUM lists), so a file named `1.png` alone on its line stays
/// a path. `tum_header` (optional) says whether a comment before the first frame is TUM's depth header.
/// Messages name `shown` (`-` for a copy of stdin), else `path`.
std::vector<ListLine> read_list(const std::string& path, bool* tum_header = nullptr, const std::string& shown = "") {
  const std::string& file = shown.empty() ? path : shown;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(file + ": cannot open");
  std::vector<ListLine> out;
  std::size_t number = 0;
  if (tum_header) *tum_header = false;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#' && tum_header && out.empty() &&
        line.compare(first, std::strlen(kTumDepthHeader), kTumDepthHeader) == 0)
      *tum_header = true;
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
    ListLine l;
    const auto gap = line.find_first_of(" \t");
    if (gap != std::string::npos) {
      const std::string head = line.substr(0, gap);
      char* end = nullptr;
      const double t = std::strtod(head.c_str(), &end);
      if (end == head.c_str() + head.size() && std::isfinite(t)) {
        l.has_time = true;
        l.time = t;
        const auto rest = line.find_first_not_of(" \t", gap);
        l.path = line.substr(rest);
        // TUM's associated lists hold `t depth t rgb`: take the first path only.
        const auto more = l.path.find_first_of(" \t");
        if (more != std::string::npos) l.path = l.path.substr(0, more);
      }
    }
    if (!l.has_time) l.path = line;
    if (l.path.empty()) throw DataError(file + ":" + std::to_string(number) + ": no path");
    l.number = number;
    out.push_back(std::move(l));
  }
  if (in.bad()) throw IoError(file + ": read failed");
  // Either every line has a timestamp or none has: one line without (a typo, `nan`, a lone number) in a timed
  // list would otherwise turn the whole sequence's timestamps into index / fps.
  const auto timed = std::find_if(out.begin(), out.end(), [](const ListLine& l) { return l.has_time; });
  const auto untimed = std::find_if(out.begin(), out.end(), [](const ListLine& l) { return !l.has_time; });
  if (timed != out.end() && untimed != out.end())
    throw DataError(file + ":" + std::to_string(untimed->number) + ": expected `timestamp path` as on line " +
                    std::to_string(timed->number) + ", got '" + untimed->path + "'");
  return out;
}

/// Frames from list lines: timestamps of the list when every line has one, else index / fps.
void frames_from_list(const std::vector<ListLine>& lines, const fs::path& folder, double fps, RgbdSequence* seq) {
  const bool timed =
      !lines.empty() && std::all_of(lines.begin(), lines.end(), [](const ListLine& l) { return l.has_time; });
  for (std::size_t i = 0; i < lines.size(); ++i) {
    RgbdFrame f;
    f.index = i;
    f.timestamp = timed ? lines[i].time : static_cast<double>(i) / fps;
    f.depth_path = join(folder, lines[i].path);
    seq->frames.push_back(std::move(f));
  }
  seq->timestamps_from_index = !timed;
}

/// associate.py between depth and rgb stamps (|dt| < 0.02 s, greedy by smallest |dt|, each once).
void associate_rgb(const std::vector<ListLine>& rgb, const fs::path& folder, RgbdSequence* seq) {
  std::vector<std::tuple<double, std::size_t, std::size_t>> candidates;
  for (std::size_t i = 0; i < seq->frames.size(); ++i)
    for (std::size_t j = 0; j < rgb.size(); ++j) {
      const double d = std::fabs(seq->frames[i].timestamp - rgb[j].time);
      if (rgb[j].has_time && d < 0.02) candidates.emplace_back(d, i, j);
    }
  std::sort(candidates.begin(), candidates.end());
  std::vector<char> used_d(seq->frames.size(), 0), used_r(rgb.size(), 0);
  for (const auto& [d, i, j] : candidates) {
    if (used_d[i] || used_r[j]) continue;
    used_d[i] = used_r[j] = 1;
    seq->frames[i].rgb_path = join(folder, rgb[j].path);
  }
}

}  // namespace

RgbdSequence list_rgbd_sequence_from_copy(const std::string& copy, const std::string& shown, double fps) {
  S3D_EXPECTS(std::isfinite(fps) && fps > 0.0, "list_rgbd_sequence: fps must be > 0");
  RgbdSequence seq;
  seq.source = shown;
  seq.layout = "list";
  bool tum = false;
  frames_from_list(read_list(copy, &tum, shown), fs::path(), fps, &seq);  // relative stays relative
  if (tum) seq.depth_scale = kDepthScaleTum;
  if (seq.frames.empty()) throw DataError(shown + ": the list names no frames");
  return seq;
}

RgbdSequence list_rgbd_sequence(const std::string& path, double fps) {
  S3D_EXPECTS(std::isfinite(fps) && fps > 0.0, "list_rgbd_sequence: fps must be > 0");
  RgbdSequence seq;
  seq.source = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw IoError(path + ": no such file or folder");
  if (!fs::is_directory(path, ec)) {
    seq.layout = "list";
    bool tum = false;
    frames_from_list(read_list(path, &tum), fs::path(path).parent_path(), fps, &seq);
    if (tum) seq.depth_scale = kDepthScaleTum;
    if (seq.frames.empty()) throw DataError(path + ": the list names no frames");
    // A list in a dataset folder (TUM's depth.txt given itself) finds the folder's files as a folder would.
    for (auto [name, field] : {std::pair<const char*, std::string*>{"camera-intrinsics.txt", &seq.intrinsics_path},
                               {"groundtruth.txt", &seq.groundtruth_path}}) {
      const fs::path p = fs::path(path).parent_path() / name;
      if (fs::is_regular_file(p, ec)) *field = p.string();
    }
    return seq;
  }
  const fs::path folder(path);
  auto beside = [&](const char* name) {
    const fs::path p = folder / name;
    return fs::is_regular_file(p, ec) ? p.string() : std::string();
  };
  seq.intrinsics_path = beside("camera-intrinsics.txt");
  seq.groundtruth_path = beside("groundtruth.txt");
  if (const std::string depth_list = beside("depth.txt"); !depth_list.empty()) {
    seq.layout = "tum";
    bool tum = false;
    frames_from_list(read_list(depth_list, &tum), folder, fps, &seq);
    if (tum) seq.depth_scale = kDepthScaleTum;
    if (seq.frames.empty()) throw DataError(depth_list + ": the list names no frames");
    if (const std::string rgb_list = beside("rgb.txt"); !rgb_list.empty() && !seq.timestamps_from_index)
      associate_rgb(read_list(rgb_list), folder, &seq);
  } else {
    std::vector<std::string> seven, sgm, png, pfm;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      if (!e.is_regular_file(ec)) continue;
      const std::string name = e.path().filename().string();
      const std::string low = lower(name);
      if (!name.empty() && name[0] == '.') continue;  // hidden files (our own temps among them)
      if (name.rfind("frame-", 0) == 0 && ends_with(low, ".depth.png")) seven.push_back(name);
      // sgm-depth --emit depth under --output-dir: NAME_depth.pfm / .png beside NAME.pfm (disparity).
      if (ends_with(low, "_depth.pfm") || ends_with(low, "_depth.png")) sgm.push_back(name);
      if (ends_with(low, ".png") && !ends_with(low, ".color.png")) png.push_back(name);
      if (ends_with(low, ".pfm")) pfm.push_back(name);
    }
    if (ec) throw IoError(path + ": cannot list the folder: " + ec.message());
    std::vector<std::string>* names = !seven.empty() ? &seven : !sgm.empty() ? &sgm : !png.empty() ? &png : &pfm;
    seq.layout = !seven.empty() ? "7scenes" : !sgm.empty() ? "sgm-depth" : !png.empty() ? "png" : "pfm";
    if (names->empty())
      throw DataError(path + ": no depth frames (expected depth.txt, frame-XXXXXX.depth.png, *.png or *.pfm)");
    std::sort(names->begin(), names->end());
    for (std::size_t i = 0; i < names->size(); ++i) {
      RgbdFrame f;
      f.index = i;
      f.timestamp = static_cast<double>(i) / fps;
      f.depth_path = (folder / (*names)[i]).string();
      seq.frames.push_back(std::move(f));
    }
    seq.timestamps_from_index = true;
    // sgm-depth states its maps' units per metre beside them (its 16-bit PNGs may hold any scale).
    if (std::string scale_file = beside(kDepthScaleFileName); !scale_file.empty()) {
      seq.depth_scale = read_depth_scale_file(scale_file);
      seq.depth_scale_path = std::move(scale_file);
    }
  }
  for (auto& f : seq.frames) {
    // 7-Scenes keeps each frame's pose beside its depth image ...
    if (ends_with(f.depth_path, ".depth.png")) {
      const std::string stem = f.depth_path.substr(0, f.depth_path.size() - 10);
      if (fs::is_regular_file(stem + ".pose.txt", ec)) f.pose_path = stem + ".pose.txt";
      // ... and its colour image (.color.png in the dataset, .color.jpg in common copies), unless a list gave one.
      for (const char* ext : {".color.png", ".color.jpg"})
        if (f.rgb_path.empty() && fs::is_regular_file(stem + ext, ec)) f.rgb_path = stem + ext;
    }
  }
  return seq;
}

double read_depth_scale_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  double scale = 0.0;
  std::size_t number = 0, found = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string text = line.substr(first, last - first + 1);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (found) throw DataError(where + "a second value (a depth-scale file holds one number: units per metre)");
    if (end != text.c_str() + text.size() || !std::isfinite(v) || !(v > 0.0))
      throw DataError(where + "expected the depth maps' units per metre (a positive number), got '" + text + "'");
    scale = v;
    found = number;
  }
  if (in.bad()) throw IoError(path + ": read failed");
  if (!found) throw DataError(path + ": no depth scale (expected one positive number: units per metre)");
  return scale;
}

std::string format_depth_scale_file(double scale) {
  return "# depth map units per metre (metres = value / this; 1 = metres)\n" + shortest_number(scale) + "\n";
}

double default_depth_scale(const std::string& path) { return ends_with(lower(path), ".pfm") ? 1.0 : kDepthScaleMm; }

ImageF read_depth_frame(const std::string& path, double depth_scale) {
  const double scale = depth_scale > 0.0 ? depth_scale : default_depth_scale(path);
  if (ends_with(lower(path), ".pfm")) {
    ImageF d = read_pfm(path);
    if (d.channels != 1) throw DataError(path + ": a 3-channel PFM, not a depth map");
    if (d.empty()) throw DataError(path + ": empty image");
    const float inv = static_cast<float>(1.0 / scale);
    for (float& v : d.data) v = (std::isfinite(v) && v > 0.0f) ? (scale == 1.0 ? v : v * inv) : kInvalid;
    return d;
  }
  // A colour PNG would be read as its grey luma: refuse it from the header's colour type (byte 25).
  {
    std::ifstream in(path, std::ios::binary);
    unsigned char head[26] = {};
    if (in.read(reinterpret_cast<char*>(head), sizeof head) && std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0 &&
        (head[25] & 2) != 0)
      throw DataError(path + ": a colour PNG, not a depth map (expected 16-bit grey)");
  }
  int bit_depth = 0;
  const ImageU16 raw = read_grey16(path, &bit_depth);
  if (bit_depth != 16)
    throw DataError(path + ": an " + std::to_string(bit_depth) + "-bit image, not a 16-bit depth PNG");
  if (raw.empty()) throw DataError(path + ": empty image");
  return decode_depth_png16(raw, scale, /*saturated_is_invalid=*/true);
}

}  // namespace s3d::io
