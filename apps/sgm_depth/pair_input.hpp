#pragma once
// sgm-depth's load stage: everything one item reads before matching (two images, calibration, ground
// truth), decoded on a frame worker thread. Exactly the checks and messages of a plain sequential read.
#include <memory>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/stereo_eval.hpp"

namespace s3d::sgm_depth {

/// A decoded stereo pair. 8-bit pairs keep only the 8-bit images (the 16-bit ones keep their sizes, for
/// messages); a pair with a 16-bit side keeps both sides at 16 bits.
struct LoadedPair {
  int left_bits = 8, right_bits = 8;
  io::ImageU16 left16, right16;
  io::ImageU8 left8, right8;
  bool sixteen() const { return left_bits == 16 || right_bits == 16; }
  int width() const { return sixteen() ? left16.width : left8.width; }
  int height() const { return sixteen() ? left16.height : left8.height; }
};

/// What the load stage hands the matcher.
struct PairInput {
  LoadedPair pair;
  std::string left_path;  ///< readable path of the left image (cloud colours are read from it)
  std::shared_ptr<const io::StereoCalibration> calib;  ///< null when none is known
  std::string gt_path;                                 ///< empty: no evaluation
  io::ImageF gt;
  std::vector<stereo::EvalMask> masks;
};

/// How items find their calibration and ground truth.
struct PairSources {
  std::shared_ptr<const io::StereoCalibration> calib;  ///< --calib (wins over a manifest's `calib`)
  bool needs_calib = false;                            ///< --emit depth or cloud
  std::string eval;                                    ///< --eval GT (wins over a manifest's `gt`)
  double gt_scale = 0.0;                               ///< --gt-scale (0: a manifest's, else the file's own)
};

/// Reads and decodes `item` (inputs: left, right; fields: calib, gt, gt_scale), timing "read" (the image
/// files' bytes), "decode" (PNG or other codec, to grey) and "read_extra" (calibration, ground truth).
/// @throws IoError / DataError naming the file.
PairInput load_pair_input(const cli::Item& item, cli::ItemContext& ctx, const PairSources& sources);

inline std::string size_text(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

}  // namespace s3d::sgm_depth
