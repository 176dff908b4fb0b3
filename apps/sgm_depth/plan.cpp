#include "plan.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "memory_budget.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/calib.hpp"

namespace s3d::sgm_depth {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// --depth-scale's value. --png-encoding names disparity encodings; for depth PNGs only `mm` (= scale 1000)
/// means something, so kitti/x16 beside a depth PNG, or mm against another --depth-scale, is refused rather than
/// ignored.
double depth_png_scale(const Flags& f, const std::vector<Emit>& emits, const cli::CommonSettings& s) {
  double scale = f.depth_scale.empty() ? io::kDepthScaleMm : io::parse_depth_scale(f.depth_scale);
  bool depth_png = false;
  for (std::size_t i = 0; i < emits.size() && i < s.outputs.size(); ++i)
    depth_png = depth_png || (emits[i] == Emit::kDepth && cli::format_of(s.outputs[i], s) == "png");
  if (f.png_encoding == "mm") {
    if (!f.depth_scale.empty() && scale != io::kDepthScaleMm)
      throw InvalidArgument("--png-encoding mm means --depth-scale 1000, not " + f.depth_scale);
    scale = io::kDepthScaleMm;
  } else if (!f.png_encoding.empty() && depth_png) {
    throw InvalidArgument("--png-encoding " + f.png_encoding +
                          " is a disparity encoding; depth PNGs take --depth-scale (mm = 1000, tum = 5000)");
  }
  return scale;
}

/// The name suffix under --output-dir: `_depth.pfm`..., with --format's extension when it is given (a cloud is
/// PLY whatever --format says), so that the file's name and content agree.
std::string suffix(Emit e, const cli::CommonSettings& s) {
  std::string sfx = default_suffix(e);
  if (!s.format.empty() && e != Emit::kCloud) sfx = sfx.substr(0, sfx.rfind('.') + 1) + lower(s.format);
  return sfx;
}

}  // namespace

Plan make_plan(const Flags& f, const cli::CommonSettings& s) {
  Plan plan;
  stereo::SgmParams& p = plan.params;
  p = f.params;
  stereo::parse_census(f.census, p.census, p.census_width, p.census_height);
  p.lr_check = !f.no_lr_check;
  p.lr_method = stereo::parse_lr_method(f.lr_method);
  if (f.subpixel_on) p.subpixel = true;
  if (f.subpixel_off) p.subpixel = false;
  if (f.median_on) p.median = true;
  if (f.median_off) p.median = false;
  if (f.fill_on) p.fill = true;
  if (f.fill_off) p.fill = false;
  p.lr_max_diff = f.lr_tol;
  plan.emit_names = f.emit_names;
  if (plan.emit_names.empty()) {
    // Without --emit: a disparity map when an output is named; none for a pure evaluation run.
    if (!s.outputs.empty() || !s.output_dir.empty())
      plan.emit_names.push_back("disparity");
    else if (f.eval.empty() && s.manifest.empty())
      throw InvalidArgument("no output: give -o FILE, --output-dir DIR, or --eval GT");
  }
  std::transform(plan.emit_names.begin(), plan.emit_names.end(), std::back_inserter(plan.emits), parse_emit);
  const auto emits = [&](Emit e) { return std::find(plan.emits.begin(), plan.emits.end(), e) != plan.emits.end(); };
  p.confidence = emits(Emit::kConfidence);
  p.validate();  // before any input is read
  if (s.outputs.size() > plan.emits.size())
    throw InvalidArgument(std::to_string(s.outputs.size()) + " outputs (-o) for " + std::to_string(plan.emits.size()) +
                          " --emit: give one -o per --emit");
  if (s.outputs.size() < plan.emits.size() && s.output_dir.empty())
    throw InvalidArgument("--emit " + plan.emit_names[s.outputs.size()] +
                          " has no -o (give one -o per --emit, or --output-dir)");
  const bool needs_calib = std::any_of(plan.emits.begin(), plan.emits.end(), needs_calibration);
  if (!f.calib.empty()) {
    plan.sources.calib = std::make_shared<const io::StereoCalibration>(io::read_calibration(f.calib));
  } else if (needs_calib && s.manifest.empty()) {
    throw InvalidArgument("--emit depth/cloud needs --calib FILE (or a manifest `calib` key)");
  }
  if (emits(Emit::kError) && f.eval.empty() && s.manifest.empty())
    throw InvalidArgument("--emit error needs a ground truth: --eval GT (or a manifest `gt` key)");
  const double depth_scale = depth_png_scale(f, plan.emits, s);
  if (f.png_encoding == "mm" && emits(Emit::kDisparity)) {
    // mm is a depth encoding; a disparity PNG with it would be meaningless, unless no disparity PNG is written.
    for (std::size_t i = 0; i < plan.emits.size() && i < s.outputs.size(); ++i)
      if (plan.emits[i] == Emit::kDisparity && cli::format_of(s.outputs[i], s) == "png")
        throw InvalidArgument("--png-encoding mm is for depth; disparity PNGs use kitti or x16");
  }
  plan.sources.needs_calib = needs_calib;
  plan.sources.eval = f.eval;
  plan.sources.gt_scale = f.gt_scale;
  EncodeSettings& encode = plan.encode;
  encode.png_encoding = f.png_encoding == "mm" ? "" : f.png_encoding;
  encode.depth_scale = depth_scale;
  encode.colormap = f.colormap;
  encode.color_lo = static_cast<float>(p.min_disparity);
  encode.color_hi = encode.color_lo + static_cast<float>(p.disparities);
  encode.max_depth = f.max_depth;
  encode.ply_ascii = f.ply_format == "ascii";
  plan.max_memory = f.max_memory.empty() ? 0 : parse_memory_size(f.max_memory);
  return plan;
}

std::string output_for(const Plan& plan, const cli::CommonSettings& s, const cli::Item& item, cli::ItemContext& ctx,
                       std::size_t slot) {
  const Emit e = plan.emits[slot];
  // Dataset records carry a name (`cones`, `000005_10`): use it rather than the left image's stem (`imL`).
  if (slot >= s.outputs.size() && !s.output_dir.empty() && item.fields.is_object() && item.fields.contains("name") &&
      item.fields["name"].is_string())
    return (fs::path(s.output_dir) / (item.fields["name"].get<std::string>() + suffix(e, s))).string();
  return ctx.output_path(slot, suffix(e, s));
}

std::vector<std::string> planned_outputs(const Plan& plan, const cli::CommonSettings& s, const cli::Item& item,
                                         cli::ItemContext& ctx) {
  std::vector<std::string> out;
  for (std::size_t slot = 0; slot < plan.emits.size(); ++slot) out.push_back(output_for(plan, s, item, ctx, slot));
  return out;
}

void state_stages_run(const stereo::SgmParams& p, nlohmann::json& settings) {
  const std::pair<const char*, bool> stages[] = {{"subpixel", p.subpixel}, {"median", p.median}, {"fill", p.fill}};
  for (const auto& [name, on] : stages) {
    settings[name] = on;
    settings[std::string("no-") + name] = !on;
  }
  settings["no-lr-check"] = !p.lr_check;
}

}  // namespace s3d::sgm_depth
