// sgm-depth: rectified stereo pairs -> disparity, depth, point cloud, confidence, colour picture.
// Flags (sgm_depth/plan), then three stages: the frame (s3d::cli) decodes each pair on its worker threads
// (sgm_depth/pair_input), the handler matches the pairs in input order (sgm_depth/job and matcher, on a GPU
// the next pair's upload overlapping this one's compute), and the outputs are encoded and written on the
// workers (sgm_depth/job and outputs); records, errors and skips stay per item, in input order.
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/stereo_datasets.hpp"
#include "sgm_depth/eval_totals.hpp"
#include "sgm_depth/job.hpp"
#include "sgm_depth/plan.hpp"

namespace {

namespace fs = std::filesystem;
using namespace s3d;
using namespace s3d::sgm_depth;

/// The matcher's flags.
void add_matching_flags(CLI::App& app, Flags& f) {
  stereo::SgmParams& p = f.params;
  const char* g = "Matching";
  app.add_option("-D,--disparities", p.disparities, "number of disparities searched (16..1024)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--min-disparity", p.min_disparity, "smallest disparity (pixels, may be negative)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--paths", p.paths, "aggregation paths")
      ->check(CLI::IsMember({4, 8}))
      ->capture_default_str()
      ->group(g);
  app.add_option("--p1", p.p1, "penalty for a disparity change of 1 (census bits)")->capture_default_str()->group(g);
  app.add_option("--p2", p.p2, "penalty for larger changes (> p1)")->capture_default_str()->group(g);
  app.add_option("--census", f.census, "census window: 9x7 (full) or cs9x7 (centre-symmetric), or [cs]WxH")
      ->capture_default_str()
      ->group(g);
  app.add_option("--uniqueness", p.uniqueness, "uniqueness margin, percent (0 = off)")->capture_default_str()->group(g);
  auto* sub = app.add_flag("--subpixel", f.subpixel_on,
                           std::string("parabola subpixel refinement") + (p.subpixel ? " (default)" : ""))
                  ->group(g);
  app.add_flag("--no-subpixel", f.subpixel_off, "integer disparities")->excludes(sub)->group(g);
  app.add_option("--lr-check", f.lr_tol, "left-right check with tolerance TOL pixels")
      ->type_name("TOL")
      ->capture_default_str()
      ->group(g);
  app.add_flag("--no-lr-check", f.no_lr_check, "no left-right check")->excludes("--lr-check")->group(g);
  app.add_option("--lr-method", f.lr_method,
                 "the right view's disparities for the left-right check: volume (from the left view's aggregated "
                 "costs, no second aggregation) or right-sgm (a second SGM run with the right image as reference)")
      ->check(CLI::IsMember({"volume", "right-sgm"}))
      ->capture_default_str()
      ->group(g);
  auto* med = app.add_flag("--median", f.median_on, std::string("3x3 median filter") + (p.median ? " (default)" : ""))
                  ->group(g);
  app.add_flag("--no-median", f.median_off, "no median filter")->excludes(med)->group(g);
  app.add_option("--speckle-size", p.speckle_size, "invalidate regions of <= N pixels (0 = off)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--speckle-range", p.speckle_range, "max disparity step inside one speckle region (pixels)")
      ->capture_default_str()
      ->group(g);
  auto* fill =
      app.add_flag("--fill", f.fill_on,
                   std::string("fill occlusions: a run of invalid pixels between valid disparities l and r, no wider "
                               "than |l - r| + 2 px, takes the smaller (farther) of the two; other invalid "
                               "pixels stay invalid; confidence stays 0 there") +
                       (p.fill ? " (default)" : ""))
          ->group(g);
  app.add_option("--max-memory", f.max_memory,
                 "most memory one pair's matching may take (host RAM on the CPU, GPU memory on a GPU), e.g. "
                 "8G; a pair needing more fails alone (default: all of the machine's RAM / the GPU's memory)")
      ->type_name("SIZE")
      ->group(g);
  app.add_flag("--no-fill", f.fill_off, std::string("leave every invalid pixel invalid") + (p.fill ? "" : " (default)"))
      ->excludes(fill)
      ->group(g);
}

/// What is written, and how.
void add_output_flags(CLI::App& app, Flags& f) {
  const char* o = "Outputs";
  app.add_option(
         "--emit", f.emit_names,
         "output to write, repeatable, one -o each (in order): disparity, depth, cloud, confidence, color, error "
         "(the KITTI devkit's log-colour error picture, with --eval); "
         "depth under --output-dir also writes the folder's camera-intrinsics.txt and depth-scale.txt "
         "(what icp-fuse reads)")
      ->type_name("WHAT")
      ->group(o);
  app.add_option("--png-encoding", f.png_encoding,
                 "16-bit disparity PNG encoding: kitti (d*256, default) or x16 (d*16); mm is for depth PNGs only "
                 "(= --depth-scale 1000); kitti/x16 with a depth PNG output is a usage error")
      ->check(CLI::IsMember({"kitti", "x16", "mm"}))
      ->group(o);
  app.add_option("--depth-scale", f.depth_scale,
                 "16-bit depth PNG value per metre: mm (1000, default), tum (5000), or any positive number; "
                 "0 = invalid")
      ->type_name("SCALE")
      ->group(o);
  app.add_option(
         "--calib", f.calib,
         "calibration for depth/cloud: KITTI P_rect_02/03, P2/P3 or P0/P1 file (also odometry's calib.txt of two "
         "unlabelled lines, P0 then P1), OpenCV Q (text or YAML), Middlebury calib.txt, or focal_px=F,baseline_m=B")
      ->type_name("FILE")
      ->group(o);
  app.add_option("--colormap", f.colormap, "colour map of --emit color")
      ->check(CLI::IsMember({"turbo", "jet", "grey"}))
      ->capture_default_str()
      ->group(o);
  app.add_option("--max-depth", f.max_depth, "drop cloud points farther than this (metres; 0 = keep all)")->group(o);
  app.add_option("--ply-format", f.ply_format, "PLY encoding")
      ->check(CLI::IsMember({"binary", "ascii"}))
      ->capture_default_str()
      ->group(o);
}

/// The flags, bound to `f`; returns --gt-scale's option (whether it was given).
CLI::Option* add_flags(cli::Tool& tool, Flags& f) {
  CLI::App& app = tool.app();
  add_matching_flags(app, f);
  add_output_flags(app, f);
  const char* e = "Evaluation";
  app.add_option("--eval", f.eval,
                 "ground-truth disparity (PFM, KITTI 16-bit PNG, or 8-bit Middlebury PNG): adds bad-1/bad-2/avg "
                 "error/D1/density to the record (also a manifest's `gt` key)")
      ->type_name("GT")
      ->group(e);
  CLI::Option* gt_scale_option =
      app.add_option("--gt-scale", f.gt_scale,
                     "d = value / SCALE for integer ground truth (default: 256 for 16-bit, info.txt beside 8-bit)")
          ->group(e);
  tool.add_example("sgm-depth left.png right.png -o disp.pfm", "one pair, float disparity (PFM)");
  tool.add_example(
      "sgm-depth L.png R.png --calib calib.txt --emit disparity --emit depth --emit cloud -o d.png -o z.png -o c.ply",
      "KITTI-style 16-bit disparity, depth in mm and a coloured point cloud");
  tool.add_example("sgm-depth kitti/training --disparities 192 --output-dir out --json > records.jsonl",
                   "a KITTI folder (image_2/ + image_3/), evaluated against disp_occ_0/ when present");
  tool.add_example("sgm-depth imL.png imR.png --eval groundtruth.png --emit color -o disp_color.png --json",
                   "accuracy against Middlebury ground truth, with a picture");
  return gt_scale_option;
}

/// Numbers the library does not see (SgmParams::validate checks its own): NaN, infinities and negative values are
/// usage errors, never silently a default.
void check_numbers(cli::Tool& tool, const Flags& f, const CLI::Option& gt_scale_option) {
  auto given = [&](const char* flag) { return tool.app().get_option(flag)->results().back(); };
  if (gt_scale_option.count() > 0 && !(std::isfinite(f.gt_scale) && f.gt_scale > 0.0))
    throw InvalidArgument("--gt-scale: expected a positive number, got " + given("--gt-scale"));
  if (!(std::isfinite(f.max_depth) && f.max_depth >= 0.0f))
    throw InvalidArgument("--max-depth: expected a finite number of metres >= 0 (0 = keep all), got " +
                          given("--max-depth"));
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  cli::Tool tool("sgm-depth",
                 "rectified stereo pairs -> disparity / depth / point cloud (census + semi-global matching)",
                 cli::ItemSpec{2, {"left", "right"}, [&f](const std::vector<std::string>& outputs) {
                                 // -o i pairs with --emit i (default: disparity); a cloud to stdout is PLY.
                                 for (std::size_t i = 0; i < outputs.size(); ++i)
                                   if (outputs[i] == "-" && (i >= f.emit_names.size() || f.emit_names[i] != "cloud"))
                                     return true;
                                 return false;
                               }});
  const CLI::Option* gt_scale_option = add_flags(tool, f);
  Run run;
  tool.spread_over_devices();  // --device cuda:all: consecutive pairs on different GPUs (sgm_depth/matcher)
  tool.on_start([&](const Device&) {
    check_numbers(tool, f, *gt_scale_option);
    run.plan = make_plan(f, tool.settings());
    prepare_run(run, tool.devices(), tool.settings());
  });
  tool.outputs_of([&](const cli::Item& item, cli::ItemContext& ctx) {
    return planned_outputs(run.plan, tool.settings(), item, ctx);
  });
  tool.on_summary([&](nlohmann::json& s) { state_stages_run(run.plan.params, s["settings"]); });
  tool.aggregate(add_eval_summary);
  // A dataset folder among the positional inputs stands for its pairs (s3d/io/stereo_datasets.hpp).
  tool.expand_arguments([&f](const std::string& arg) -> std::optional<std::vector<nlohmann::json>> {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) return std::nullopt;
    return io::stereo_dataset_items(arg, f.gt_scale);
  });

  cli::Stages<PairInput, PairOutput> stages;
  stages.load = [&](const cli::Item& item, cli::ItemContext& ctx) {
    return load_pair_input(item, ctx, run.plan.sources);
  };
  stages.handle = [&](const cli::Item& item, PairInput& in, cli::ItemContext& ctx, cli::NextItem<PairInput> next) {
    return match_pair(item, in, ctx, next, run, tool.settings());
  };
  stages.write = [&](const cli::Item& item, PairOutput& out, cli::ItemContext& ctx) {
    return write_pair(item, out, ctx, run, tool.settings());
  };
  return tool.run(argc, argv, std::move(stages));
}
