#pragma once
// One RGB-D (or depth-only) sequence: the list of its depth frames, in order, with timestamps, and the
// reading of one depth frame into metres. The layouts recognised (docs/ICP-FUSE.md, "Inputs"):
// - a TUM RGB-D / ICL-NUIM folder: `depth.txt` (`timestamp path` lines after `#` comments, paths relative
//   to the folder), optional `rgb.txt` associated to it by timestamp (|dt| < 0.02 s, greedy, TUM
//   `associate.py`), optional `groundtruth.txt`; TUM's own header (`# depth maps`) sets 5000 units/m;
// - a 7-Scenes folder: `frame-XXXXXX.depth.png` in name order (+ `frame-XXXXXX.pose.txt`,
//   `frame-XXXXXX.color.png` or `.color.jpg`, `camera-intrinsics.txt`), timestamps frame index / fps;
// - sgm-depth's `--emit depth` output under --output-dir: every `*_depth.pfm` / `*_depth.png` (PFM metres
//   with +inf invalid, 16-bit PNG), ignoring the disparity maps beside them, in name order; sgm-depth writes
//   the folder's `camera-intrinsics.txt` (3x3 K) and `depth-scale.txt` (units per metre) beside them;
// - a plain folder of depth images: every `*.png`, else every `*.pfm`, in name order, timestamps frame
//   index / fps;
// - a list file: one frame per line, `path` or `timestamp path` (paths relative to the list's folder),
//   blank lines and `#` comments skipped.
// Every failure throws s3d::IoError or s3d::DataError with a one-line what() that starts with the path.
#include <cstddef>
#include <string>
#include <vector>

#include "s3d/io/image.hpp"

namespace s3d::io {

/// One depth frame of a sequence.
struct RgbdFrame {
  std::size_t index = 0;   ///< position in the sequence (0-based, before any --frames range)
  double timestamp = 0.0;  ///< seconds: the list's, else index / fps
  std::string depth_path;  ///< the depth image (.png 16-bit or .pfm)
  std::string rgb_path;    ///< the associated colour image, empty when none
  std::string pose_path;   ///< a 7-Scenes `frame-XXXXXX.pose.txt` beside the depth image, empty when none
};

/// What `list_rgbd_sequence` found.
struct RgbdSequence {
  std::string source;  ///< the folder or list file given
  /// "tum" (depth.txt), "7scenes" (frame-*.depth.png), "sgm-depth" (*_depth.pfm/png), "png" / "pfm" (plain
  /// folder), "list" (a list file).
  std::string layout;
  std::vector<RgbdFrame> frames;
  bool timestamps_from_index = false;  ///< true when timestamps are index / fps (no list gave them)
  /// The folder's (a list file's: the list's folder's) `camera-intrinsics.txt`, empty when absent.
  std::string intrinsics_path;
  std::string groundtruth_path;  ///< likewise its `groundtruth.txt`
  /// Depth units per metre the listing itself states, 0 when it states none (then each file's format
  /// decides: default_depth_scale). 5000 for a list that opens with TUM RGB-D's `# depth maps` header; the
  /// number in a folder's `depth-scale.txt` (kDepthScaleFileName) for a folder without depth.txt (sgm-depth,
  /// png, pfm, 7scenes).
  double depth_scale = 0.0;
  std::string depth_scale_path;  ///< the depth-scale.txt read, empty when none
};

/// The files that describe a folder of depth maps (sgm-depth writes both beside its `--emit depth` maps):
/// the camera's 3x3 K (7-Scenes' name and form) and the maps' units per metre (one number: 1 for PFM metres,
/// the 16-bit PNG scale, e.g. 1000 for millimetres).
inline constexpr const char* kIntrinsicsFileName = "camera-intrinsics.txt";
inline constexpr const char* kDepthScaleFileName = "depth-scale.txt";

/// Reads a depth-scale.txt: exactly one positive finite number (units per metre) on a line of its own; blank
/// lines and `#` comment lines are skipped. @throws IoError (cannot read), DataError naming `path:LINE`.
double read_depth_scale_file(const std::string& path);

/// The text of a depth-scale.txt for `scale` units per metre (a comment line saying what it is, then the number).
std::string format_depth_scale_file(double scale);

/// Lists the frames of the sequence at `path` (a folder or a list file; see the file comment). `fps` gives
/// the timestamps of layouts without them (index / fps). @throws IoError (cannot read), DataError (no
/// frames, a list line that does not parse, naming `file:line`).
RgbdSequence list_rgbd_sequence(const std::string& path, double fps = 30.0);

/// Lists the frames of a list file read from a stream (stdin, `-`) and copied to `copy`: its relative paths
/// are relative to the working directory (as for `--input-list -`), not to the copy's folder, messages name
/// `shown` (`-`), and no folder files are looked for. @throws as list_rgbd_sequence.
RgbdSequence list_rgbd_sequence_from_copy(const std::string& copy, const std::string& shown, double fps = 30.0);

/// Gives each frame of `listing` its colour image from `folder` (`--images DIR`): the image named as the depth
/// frame without its extension and without sgm-depth's `_depth` (or 7-Scenes' `.depth`) suffix (000000_depth.pfm
/// takes 000000.png, as sgm-depth names its maps after the left images); failing that for some frame, with as
/// many images (.png .jpg .jpeg .ppm .pgm, not hidden) as frames, the images in name order. @throws IoError
/// (cannot list the folder), DataError (neither rule applies; the message names `name`, the sequence).
void attach_images(const std::string& folder, RgbdSequence& listing, const std::string& name);

/// The frames whose index lies in [first, last), in order.
std::vector<RgbdFrame> frames_in_range(const std::vector<RgbdFrame>& frames, std::size_t first, std::size_t last);

/// The frame's colour image, of its depth's size. @throws DataError (none associated, another size), IoError.
ImageU8 read_frame_color(const RgbdFrame& frame, int width, int height);

/// The default units per metre of a depth file: 1 for `.pfm` (metres), 1000 (mm) for anything else.
double default_depth_scale(const std::string& path);

/// Reads one depth frame into metres: value / `depth_scale` (`depth_scale` <= 0: default_depth_scale).
/// 16-bit PNG: 0 and 65535 are invalid; PFM: non-finite and <= 0 values are invalid. Invalid pixels are
/// `kInvalid` (+inf). @throws IoError (cannot read or decode: truncated, corrupt), DataError (an 8-bit image,
/// colour channels, an empty image), both naming `path`.
ImageF read_depth_frame(const std::string& path, double depth_scale = 0.0);

}  // namespace s3d::io
