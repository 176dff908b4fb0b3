#include "depth_folder.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "s3d/cli/atomic_file.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/rgbd_sequence.hpp"

namespace s3d::sgm_depth {
namespace {

namespace fs = std::filesystem;

std::string camera_text(const io::PinholeIntrinsics& k) {
  return "fx " + io::shortest_number(k.fx) + " fy " + io::shortest_number(k.fy) + " cx " + io::shortest_number(k.cx) +
         " cy " + io::shortest_number(k.cy);
}

bool same_camera(const io::PinholeIntrinsics& a, const io::PinholeIntrinsics& b) {
  return a.fx == b.fx && a.fy == b.fy && a.cx == b.cx && a.cy == b.cy;
}

// What an existing file says, in camera_text's words (or "unreadable: why"); nullopt when there is no file.
template <typename Read>
std::optional<std::string> existing(const std::string& path, Read read) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    return read(path);
  } catch (const Error& e) {
    return std::string("unreadable (") + e.what() + ")";
  }
}

// Writes `text` to `path` through a temp file renamed into place; `replace` false never replaces a file that
// another process created meanwhile (returns false then).
bool commit_text(const std::string& path, const std::string& text, bool replace) {
  const std::string tmp = cli::temp_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw IoError(path + ": cannot write");
    }
  }
  try {
    cli::commit_file(tmp, path, replace);
  } catch (const IoError&) {
    std::remove(tmp.c_str());
    std::error_code ec;
    if (!replace && fs::exists(path, ec)) return false;
    throw;
  }
  return true;
}

}  // namespace

void DepthFolderFiles::describe(const std::string& folder, const io::PinholeIntrinsics& k, double scale) {
  const fs::path dir = folder.empty() ? fs::path(".") : fs::path(folder);
  const std::string k_path = (dir / io::kIntrinsicsFileName).string();
  const std::string s_path = (dir / io::kDepthScaleFileName).string();
  const std::string want_k = camera_text(k), want_s = io::shortest_number(scale);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = fs::absolute(dir).lexically_normal().string();
  if (const auto it = folders_.find(key); it != folders_.end()) {
    if (!same_camera(it->second.k, k))
      throw DataError(k_path + ": an earlier item of this run wrote " + camera_text(it->second.k) +
                      " there, this item's calibration (" + k.source + ") gives " + want_k +
                      ": items with different calibrations (or, without cx/cy, image sizes) need different "
                      "output folders (e.g. a manifest `name` with a subfolder)");
    if (it->second.scale != scale)
      throw DataError(s_path + ": an earlier item of this run wrote depth maps of " +
                      io::shortest_number(it->second.scale) + " units per metre there, this one " + want_s +
                      " (PFM is 1, a PNG --depth-scale): one depth encoding per output folder");
    return;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Each file: its path, what it should say (in camera_text's words), what it says now, and its text.
  struct File {
    std::string path, want, text;
    std::optional<std::string> have;
    std::string what;  ///< whose values they are, for messages
  };
  File files[2] = {
      {k_path, want_k, io::format_camera_matrix(k),
       existing(k_path, [](const std::string& p) { return camera_text(io::read_intrinsics(p)); }),
       " (" + k.source + ")"},
      {s_path, want_s, io::format_depth_scale_file(scale),
       existing(s_path, [](const std::string& p) { return io::shortest_number(io::read_depth_scale_file(p)); }),
       " units per metre"}};
  if (!overwrite_)
    for (const File& f : files)
      if (f.have && *f.have != f.want)
        throw DataError(f.path + ": says " + *f.have + ", but this item's depth maps have " + f.want + f.what +
                        ": write into another --output-dir, or pass --overwrite to replace it");
  for (int i = 0; i < 2; ++i) {
    const File& f = files[i];
    if (f.have && *f.have == f.want) continue;
    if (commit_text(f.path, f.text, /*replace=*/f.have.has_value())) continue;
    // Another process (a shard of this batch) created it meanwhile: it must say the same.
    const std::string got =
        i == 0 ? camera_text(io::read_intrinsics(f.path)) : io::shortest_number(io::read_depth_scale_file(f.path));
    if (got != f.want)
      throw DataError(f.path + ": another process wrote " + got + " there meanwhile, but this item's depth maps have " +
                      f.want + f.what);
  }
  folders_[key] = Described{k, scale};
}

}  // namespace s3d::sgm_depth
