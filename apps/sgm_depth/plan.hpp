#pragma once
// sgm-depth's flags turned into library parameters once, before any input is read (a bad combination is a usage
// error, exit 2), and the output paths an item gets (docs/SGM-DEPTH.md, "Outputs").
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outputs.hpp"
#include "pair_input.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::sgm_depth {

/// The flags as given.
struct Flags {
  stereo::SgmParams params;  // defaults are the library's (chosen on the real scenes, docs/ACCURACY.md)
  std::string census = "9x7";
  float lr_tol = stereo::SgmParams{}.lr_max_diff;
  bool no_lr_check = false;
  std::string lr_method = stereo::lr_method_name(stereo::SgmParams{}.lr_method);
  bool subpixel_on = false, subpixel_off = false, median_on = false, median_off = false;
  bool fill_on = false, fill_off = false;
  std::vector<std::string> emit_names;
  std::string calib;
  std::string eval;
  std::string png_encoding;  // empty = kitti for disparity; mm = depth scale 1000
  std::string depth_scale;   // 16-bit depth PNG units per metre; empty = 1000 (mm)
  double gt_scale = 0.0;
  std::string colormap = "turbo";
  float max_depth = 0.0f;
  std::string ply_format = "binary";
  std::string max_memory;  // empty: the machine's memory (sgm_depth/memory_budget)
};

/// Flags checked and turned into library settings.
struct Plan {
  stereo::SgmParams params;
  std::vector<std::string> emit_names;  ///< one per output slot (default: disparity when an output is named)
  std::vector<Emit> emits;
  PairSources sources;  ///< --calib (read here), --eval, --gt-scale
  EncodeSettings encode;
  std::size_t max_memory = 0;  ///< bytes; 0 = the device's
};

/// @throws InvalidArgument naming the flag (exit 2); IoError / DataError naming --calib's file.
Plan make_plan(const Flags& f, const cli::CommonSettings& settings);

/// The path of the item's output `slot` (-o, a template, or --output-dir with the emit's suffix; a dataset
/// record's `name` names it under --output-dir).
std::string output_for(const Plan& plan, const cli::CommonSettings& settings, const cli::Item& item,
                       cli::ItemContext& ctx, std::size_t slot);
/// Every output of the item, in --emit order.
std::vector<std::string> planned_outputs(const Plan& plan, const cli::CommonSettings& settings, const cli::Item& item,
                                         cli::ItemContext& ctx);

/// The summary's settings say which optional stages ran (a flag pair such as --median / --no-median is false in
/// the settings when neither was given, yet the stage runs by default).
void state_stages_run(const stereo::SgmParams& params, nlohmann::json& settings);

}  // namespace s3d::sgm_depth
