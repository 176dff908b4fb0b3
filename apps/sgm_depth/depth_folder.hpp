#pragma once
// What a folder of sgm-depth's depth maps needs beside them for a reader that knows nothing of the rig
// (icp-fuse, s3d/io/rgbd_sequence.hpp): `camera-intrinsics.txt`, the rectified left camera's 3x3 K (7-Scenes'
// name and form), and `depth-scale.txt`, the maps' units per metre (1 for PFM metres, --depth-scale for 16-bit
// PNGs). Written under --output-dir, once per folder and run, each atomically (a temp file renamed into
// place); every item written into a folder must agree with them.
#include <map>
#include <mutex>
#include <string>

#include "s3d/io/calib.hpp"

namespace s3d::sgm_depth {

class DepthFolderFiles {
 public:
  /// `overwrite` (--overwrite): a folder's files that describe other depth maps are replaced, once per run.
  explicit DepthFolderFiles(bool overwrite) : overwrite_(overwrite) {}

  /// Makes `folder` (created when missing) describe depth maps of camera `k` at `scale` units per metre:
  /// writes its two files when absent, keeps them when they already say so (another shard, an earlier run),
  /// replaces them under --overwrite the first time this run meets the folder. Thread-safe.
  /// @throws DataError naming the file when an earlier item of this run described the folder otherwise (items
  ///         with different calibrations, image sizes or depth scales into one folder), or when the folder's
  ///         file says otherwise (or cannot be read) and `overwrite` is off; IoError when it cannot be written.
  void describe(const std::string& folder, const io::PinholeIntrinsics& k, double scale);

 private:
  struct Described {
    io::PinholeIntrinsics k;
    double scale = 0.0;
  };
  bool overwrite_;
  std::mutex mutex_;
  std::map<std::string, Described> folders_;  ///< by the folder's absolute, normalised path
};

}  // namespace s3d::sgm_depth
