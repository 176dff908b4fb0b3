// sgm-depth: rectified stereo pairs -> disparity, depth, point cloud, confidence, colour picture.
// Options, then three stages: the frame (s3d::cli) decodes each pair on its worker threads
// (sgm_depth/pair_input), this file's handler matches the pairs in input order (sgm_depth/matcher, on a
// GPU the next pair's upload overlapping this one's compute), and the outputs are encoded and written on
// the workers (sgm_depth/outputs); records, errors and skips stay per item, in input order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "s3d/cli/atomic_file.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/stereo_datasets.hpp"
#include "s3d/io/stereo_eval.hpp"
#include "s3d/stereo/metrics.hpp"
#include "s3d/stereo/sgm.hpp"
#include "sgm_depth/depth_folder.hpp"
#include "sgm_depth/eval_totals.hpp"
#include "sgm_depth/matcher.hpp"
#include "sgm_depth/memory_budget.hpp"
#include "sgm_depth/outputs.hpp"
#include "sgm_depth/pair_input.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace s3d::sgm_depth {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct Options {
  stereo::SgmParams params;  // defaults are the library's (chosen on the real scenes, docs/ACCURACY.md)
  std::string census = "9x7";
  float lr_tol = stereo::SgmParams{}.lr_max_diff;
  bool no_lr_check = false;
  bool subpixel_on = false, subpixel_off = false, median_on = false, median_off = false;
  bool fill_on = false, fill_off = false;
  std::vector<std::string> emit_names;
  std::vector<Emit> emits;
  std::string calib;
  std::string eval;
  std::string png_encoding;  // empty = kitti for disparity; mm = depth scale 1000
  std::string depth_scale;   // 16-bit depth PNG units per metre; empty = 1000 (mm)
  double depth_scale_value = io::kDepthScaleMm;
  double gt_scale = 0.0;
  std::string colormap = "turbo";
  float max_depth = 0.0f;
  std::string ply_format = "binary";
  std::string max_memory;  // empty: the machine's memory (sgm_depth/memory_budget)
};

// What the handler hands the writers: the match and what its outputs need.
struct PairOutput {
  Match match;
  std::shared_ptr<const io::StereoCalibration> calib;
  std::string left_path;
  io::ImageF gt;                     ///< --emit error: the ground truth (empty without one)
  std::vector<std::uint8_t> nonocc;  ///< and its non-occluded mask, when the dataset has one
  json record;
};

class App {
 public:
  App()
      : tool_("sgm-depth", "rectified stereo pairs -> disparity / depth / point cloud (census + semi-global matching)",
              cli::ItemSpec{2, {"left", "right"}, [this](const std::vector<std::string>& outputs) {
                              // -o i pairs with --emit i (default: disparity); a cloud to stdout is PLY.
                              for (std::size_t i = 0; i < outputs.size(); ++i)
                                if (outputs[i] == "-" && (i >= opt_.emit_names.size() || opt_.emit_names[i] != "cloud"))
                                  return true;
                              return false;
                            }}) {
    add_options();
    tool_.on_start([this](const Device& d) { start(d); });
    tool_.outputs_of([this](const cli::Item& item, cli::ItemContext& ctx) { return outputs(item, ctx); });
    tool_.on_summary([this](json& s) { show_stages_run(s["settings"]); });
    tool_.aggregate(add_eval_summary);
    // A dataset folder among the positional inputs stands for its pairs (s3d/io/stereo_datasets.hpp).
    tool_.expand_arguments([this](const std::string& arg) -> std::optional<std::vector<json>> {
      std::error_code ec;
      if (!fs::is_directory(arg, ec)) return std::nullopt;
      return io::stereo_dataset_items(arg, opt_.gt_scale);
    });
  }

  int run(int argc, char** argv) {
    cli::Stages<PairInput, PairOutput> stages;
    stages.load = [this](const cli::Item& item, cli::ItemContext& ctx) { return load_pair_input(item, ctx, sources_); };
    stages.handle = [this](const cli::Item& item, PairInput& in, cli::ItemContext& ctx, cli::NextItem<PairInput> next) {
      return handle(item, in, ctx, next);
    };
    stages.write = [this](const cli::Item& item, PairOutput& out, cli::ItemContext& ctx) {
      return write(item, out, ctx);
    };
    return tool_.run(argc, argv, std::move(stages));
  }

 private:
  void add_options() {
    CLI::App& app = tool_.app();
    stereo::SgmParams& p = opt_.params;
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
    app.add_option("--census", opt_.census, "census window: 9x7 (full) or cs9x7 (centre-symmetric), or [cs]WxH")
        ->capture_default_str()
        ->group(g);
    app.add_option("--uniqueness", p.uniqueness, "uniqueness margin, percent (0 = off)")
        ->capture_default_str()
        ->group(g);
    auto* sub = app.add_flag("--subpixel", opt_.subpixel_on,
                             std::string("parabola subpixel refinement") + (p.subpixel ? " (default)" : ""))
                    ->group(g);
    app.add_flag("--no-subpixel", opt_.subpixel_off, "integer disparities")->excludes(sub)->group(g);
    app.add_option("--lr-check", opt_.lr_tol, "left-right check with tolerance TOL pixels")
        ->type_name("TOL")
        ->capture_default_str()
        ->group(g);
    app.add_flag("--no-lr-check", opt_.no_lr_check, "no left-right check")->excludes("--lr-check")->group(g);
    auto* med =
        app.add_flag("--median", opt_.median_on, std::string("3x3 median filter") + (p.median ? " (default)" : ""))
            ->group(g);
    app.add_flag("--no-median", opt_.median_off, "no median filter")->excludes(med)->group(g);
    app.add_option("--speckle-size", p.speckle_size, "invalidate regions of <= N pixels (0 = off)")
        ->capture_default_str()
        ->group(g);
    app.add_option("--speckle-range", p.speckle_range, "max disparity step inside one speckle region (pixels)")
        ->capture_default_str()
        ->group(g);
    auto* fill =
        app.add_flag("--fill", opt_.fill_on,
                     std::string("fill occlusions: a run of invalid pixels between valid disparities l and r, no wider "
                                 "than |l - r| + 2 px, takes the smaller (farther) of the two; other invalid "
                                 "pixels stay invalid; confidence stays 0 there") +
                         (p.fill ? " (default)" : ""))
            ->group(g);
    app.add_option("--max-memory", opt_.max_memory,
                   "most memory one pair's matching may take (host RAM on the CPU, GPU memory on a GPU), e.g. "
                   "8G; a pair needing more fails alone (default: all of the machine's RAM / the GPU's memory)")
        ->type_name("SIZE")
        ->group(g);
    app.add_flag("--no-fill", opt_.fill_off,
                 std::string("leave every invalid pixel invalid") + (p.fill ? "" : " (default)"))
        ->excludes(fill)
        ->group(g);

    const char* o = "Outputs";
    app.add_option(
           "--emit", opt_.emit_names,
           "output to write, repeatable, one -o each (in order): disparity, depth, cloud, confidence, color, error "
           "(the KITTI devkit's log-colour error picture, with --eval); "
           "depth under --output-dir also writes the folder's camera-intrinsics.txt and depth-scale.txt "
           "(what icp-fuse reads)")
        ->type_name("WHAT")
        ->group(o);
    app.add_option("--png-encoding", opt_.png_encoding,
                   "16-bit disparity PNG encoding: kitti (d*256, default) or x16 (d*16); mm is for depth PNGs only "
                   "(= --depth-scale 1000); kitti/x16 with a depth PNG output is a usage error")
        ->check(CLI::IsMember({"kitti", "x16", "mm"}))
        ->group(o);
    app.add_option("--depth-scale", opt_.depth_scale,
                   "16-bit depth PNG value per metre: mm (1000, default), tum (5000), or any positive number; "
                   "0 = invalid")
        ->type_name("SCALE")
        ->group(o);
    app.add_option(
           "--calib", opt_.calib,
           "calibration for depth/cloud: KITTI P_rect_02/03, P2/P3 or P0/P1 file (also odometry's calib.txt of two "
           "unlabelled lines, P0 then P1), OpenCV Q (text or YAML), Middlebury calib.txt, or focal_px=F,baseline_m=B")
        ->type_name("FILE")
        ->group(o);
    app.add_option("--colormap", opt_.colormap, "colour map of --emit color")
        ->check(CLI::IsMember({"turbo", "jet", "grey"}))
        ->capture_default_str()
        ->group(o);
    app.add_option("--max-depth", opt_.max_depth, "drop cloud points farther than this (metres; 0 = keep all)")
        ->group(o);
    app.add_option("--ply-format", opt_.ply_format, "PLY encoding")
        ->check(CLI::IsMember({"binary", "ascii"}))
        ->capture_default_str()
        ->group(o);

    const char* e = "Evaluation";
    app.add_option("--eval", opt_.eval,
                   "ground-truth disparity (PFM, KITTI 16-bit PNG, or 8-bit Middlebury PNG): adds bad-1/bad-2/avg "
                   "error/D1/density to the record (also a manifest's `gt` key)")
        ->type_name("GT")
        ->group(e);
    gt_scale_opt_ =
        app.add_option("--gt-scale", opt_.gt_scale,
                       "d = value / SCALE for integer ground truth (default: 256 for 16-bit, info.txt beside 8-bit)")
            ->group(e);

    tool_.add_example("sgm-depth left.png right.png -o disp.pfm", "one pair, float disparity (PFM)");
    tool_.add_example(
        "sgm-depth L.png R.png --calib calib.txt --emit disparity --emit depth --emit cloud -o d.png -o z.png -o c.ply",
        "KITTI-style 16-bit disparity, depth in mm and a coloured point cloud");
    tool_.add_example("sgm-depth kitti/training --disparities 192 --output-dir out --json > records.jsonl",
                      "a KITTI folder (image_2/ + image_3/), evaluated against disp_occ_0/ when present");
    tool_.add_example("sgm-depth imL.png imR.png --eval groundtruth.png --emit color -o disp_color.png --json",
                      "accuracy against Middlebury ground truth, with a picture");
  }

  void start(const Device& device) {
    check_numbers();
    stereo::SgmParams& p = opt_.params;
    stereo::parse_census(opt_.census, p.census, p.census_width, p.census_height);
    p.lr_check = !opt_.no_lr_check;
    if (opt_.subpixel_on) p.subpixel = true;
    if (opt_.subpixel_off) p.subpixel = false;
    if (opt_.median_on) p.median = true;
    if (opt_.median_off) p.median = false;
    if (opt_.fill_on) p.fill = true;
    if (opt_.fill_off) p.fill = false;
    p.lr_max_diff = opt_.lr_tol;
    const auto& s = tool_.settings();
    if (opt_.emit_names.empty()) {
      // Without --emit: a disparity map when an output is named; none for a pure evaluation run.
      if (!s.outputs.empty() || !s.output_dir.empty())
        opt_.emit_names.push_back("disparity");
      else if (opt_.eval.empty() && s.manifest.empty())
        throw InvalidArgument("no output: give -o FILE, --output-dir DIR, or --eval GT");
    }
    for (const auto& n : opt_.emit_names) opt_.emits.push_back(parse_emit(n));
    p.confidence = std::find(opt_.emits.begin(), opt_.emits.end(), Emit::kConfidence) != opt_.emits.end();
    p.validate();  // before any input is read: a bad combination is a usage error (exit 2)
    if (s.outputs.size() > opt_.emits.size())
      throw InvalidArgument(std::to_string(s.outputs.size()) + " outputs (-o) for " +
                            std::to_string(opt_.emits.size()) + " --emit: give one -o per --emit");
    if (s.outputs.size() < opt_.emits.size() && s.output_dir.empty())
      throw InvalidArgument("--emit " + opt_.emit_names[s.outputs.size()] +
                            " has no -o (give one -o per --emit, or --output-dir)");
    const bool needs_calib = std::any_of(opt_.emits.begin(), opt_.emits.end(), needs_calibration);
    if (!opt_.calib.empty()) {
      sources_.calib = std::make_shared<const io::StereoCalibration>(io::read_calibration(opt_.calib));
    } else if (needs_calib && s.manifest.empty()) {
      throw InvalidArgument("--emit depth/cloud needs --calib FILE (or a manifest `calib` key)");
    }
    if (std::find(opt_.emits.begin(), opt_.emits.end(), Emit::kError) != opt_.emits.end() && opt_.eval.empty() &&
        s.manifest.empty())
      throw InvalidArgument("--emit error needs a ground truth: --eval GT (or a manifest `gt` key)");
    check_depth_png_options();
    if (opt_.png_encoding == "mm" &&
        std::any_of(opt_.emits.begin(), opt_.emits.end(), [](Emit e) { return e == Emit::kDisparity; })) {
      // mm is a depth encoding; a disparity PNG with it would be meaningless, unless no disparity PNG is written.
      for (std::size_t i = 0; i < opt_.emits.size() && i < s.outputs.size(); ++i)
        if (opt_.emits[i] == Emit::kDisparity && format_of(s.outputs[i]) == "png")
          throw InvalidArgument("--png-encoding mm is for depth; disparity PNGs use kitti or x16");
    }
    sources_.needs_calib = needs_calib;
    sources_.eval = opt_.eval;
    sources_.gt_scale = opt_.gt_scale;
    encode_.png_encoding = opt_.png_encoding == "mm" ? "" : opt_.png_encoding;
    encode_.depth_scale = opt_.depth_scale_value;
    encode_.colormap = opt_.colormap;
    encode_.color_lo = static_cast<float>(p.min_disparity);
    encode_.color_hi = encode_.color_lo + static_cast<float>(p.disparities);
    encode_.max_depth = opt_.max_depth;
    encode_.ply_ascii = opt_.ply_format == "ascii";
    depth_folders_ = std::make_unique<DepthFolderFiles>(s.overwrite);
    const std::size_t max_memory = opt_.max_memory.empty() ? 0 : parse_memory_size(opt_.max_memory);
    matcher_ = std::make_unique<PairMatcher>(device, p, MemoryBudget(device, max_memory));
  }

  // Numbers the library does not see (SgmParams::validate checks its own): NaN, infinities and negative
  // values are usage errors, never silently a default.
  void check_numbers() {
    auto given = [&](const char* flag) { return tool_.app().get_option(flag)->results().back(); };
    if (gt_scale_opt_->count() > 0 && !(std::isfinite(opt_.gt_scale) && opt_.gt_scale > 0.0))
      throw InvalidArgument("--gt-scale: expected a positive number, got " + given("--gt-scale"));
    if (!(std::isfinite(opt_.max_depth) && opt_.max_depth >= 0.0f))
      throw InvalidArgument("--max-depth: expected a finite number of metres >= 0 (0 = keep all), got " +
                            given("--max-depth"));
  }

  // A flag pair such as --median / --no-median is false in the settings when neither was given, yet the
  // stage runs by default: the summary states what ran.
  void show_stages_run(json& settings) const {
    const stereo::SgmParams& p = opt_.params;
    const std::pair<const char*, bool> stages[] = {{"subpixel", p.subpixel}, {"median", p.median}, {"fill", p.fill}};
    for (const auto& [name, on] : stages) {
      settings[name] = on;
      settings[std::string("no-") + name] = !on;
    }
    settings["no-lr-check"] = !p.lr_check;
  }

  // --png-encoding names disparity encodings; for depth PNGs only `mm` (= scale 1000) means something, so
  // kitti/x16 beside a depth PNG, or mm against another --depth-scale, is refused rather than ignored.
  void check_depth_png_options() {
    const auto& s = tool_.settings();
    if (!opt_.depth_scale.empty()) opt_.depth_scale_value = io::parse_depth_scale(opt_.depth_scale);
    bool depth_png = false;
    for (std::size_t i = 0; i < opt_.emits.size() && i < s.outputs.size(); ++i)
      depth_png = depth_png || (opt_.emits[i] == Emit::kDepth && format_of(s.outputs[i]) == "png");
    if (opt_.png_encoding == "mm") {
      if (!opt_.depth_scale.empty() && opt_.depth_scale_value != io::kDepthScaleMm)
        throw InvalidArgument("--png-encoding mm means --depth-scale 1000, not " + opt_.depth_scale);
      opt_.depth_scale_value = io::kDepthScaleMm;
    } else if (!opt_.png_encoding.empty() && depth_png) {
      throw InvalidArgument("--png-encoding " + opt_.png_encoding +
                            " is a disparity encoding; depth PNGs take --depth-scale (mm = 1000, tum = 5000)");
    }
  }

  // The format of an output path: --format wins, else the extension (lower case, no dot).
  std::string format_of(const std::string& path) const {
    const auto& s = tool_.settings();
    if (!s.format.empty()) return lower(s.format);
    std::string e = lower(fs::path(path).extension().string());
    return e.empty() ? "" : e.substr(1);
  }

  // The name suffix under --output-dir: `_depth.pfm`..., with --format's extension when it is given (a cloud is
  // PLY whatever --format says), so that the file's name and content agree.
  std::string suffix(Emit e) const {
    std::string sfx = default_suffix(e);
    const std::string& format = tool_.settings().format;
    if (!format.empty() && e != Emit::kCloud) sfx = sfx.substr(0, sfx.rfind('.') + 1) + lower(format);
    return sfx;
  }

  std::string output_for(const cli::Item& item, cli::ItemContext& ctx, std::size_t slot) const {
    const auto& s = tool_.settings();
    const Emit e = opt_.emits[slot];
    // Dataset records carry a name (`cones`, `000005_10`): use it rather than the left image's stem (`imL`).
    if (slot >= s.outputs.size() && !s.output_dir.empty() && item.fields.is_object() && item.fields.contains("name") &&
        item.fields["name"].is_string())
      return (fs::path(s.output_dir) / (item.fields["name"].get<std::string>() + suffix(e))).string();
    return ctx.output_path(slot, suffix(e));
  }

  // Under --output-dir, each folder that gets depth maps also gets what a reader needs to use them
  // (camera-intrinsics.txt, depth-scale.txt: sgm_depth/depth_folder.hpp), in input order, so that of two items
  // with different calibrations into one folder it is always the later one that fails.
  void describe_depth_folders(const cli::Item& item, cli::ItemContext& ctx, const PairOutput& out) {
    if (tool_.settings().output_dir.empty() || !out.calib) return;
    for (std::size_t slot = 0; slot < opt_.emits.size(); ++slot) {
      if (opt_.emits[slot] != Emit::kDepth) continue;
      const std::string path = output_for(item, ctx, slot);
      if (path.empty() || path == "-" || cli::is_write_through(path)) continue;
      const std::string format = format_of(path);
      if (format != "pfm" && format != "png") continue;  // the write fails the item with its own message
      const io::PinholeIntrinsics k =
          geometry::left_intrinsics(*out.calib, out.match.disparity.width, out.match.disparity.height);
      depth_folders_->describe(fs::path(path).parent_path().string(), k, format == "pfm" ? 1.0 : encode_.depth_scale);
    }
  }

  std::vector<std::string> outputs(const cli::Item& item, cli::ItemContext& ctx) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < opt_.emits.size(); ++i) out.push_back(output_for(item, ctx, i));
    return out;
  }

  // The handler: matches the pair (in input order, on the main thread) and evaluates it.
  PairOutput handle(const cli::Item& item, PairInput& in, cli::ItemContext& ctx, cli::NextItem<PairInput> next) {
    const std::string& left_name = item.inputs.at(0);
    PairOutput out;
    out.match = matcher_->match(item.index, in.pair, next.item ? next.item->index : 0,
                                next.input ? &next.input->pair : nullptr, left_name, ctx);
    out.calib = in.calib;
    out.left_path = in.left_path;
    const io::ImageF& disparity = out.match.disparity;

    json& rec = out.record;
    rec["right"] = item.inputs.at(1);
    rec["width"] = disparity.width;
    rec["height"] = disparity.height;
    rec["bit_depth"] = in.pair.sixteen() ? 16 : 8;
    rec["disparities"] = opt_.params.disparities;
    rec["min_disparity"] = opt_.params.min_disparity;
    rec["density"] = stereo::valid_percent(disparity.cview());
    if (const io::StereoCalibration* calib = in.calib.get())
      rec["calib"] = {{"source", calib->source},
                      {"format", calib->format},
                      {"focal_px", calib->focal_px},
                      {"baseline_m", calib->baseline_m}};
    if (!in.gt_path.empty()) {
      cli::StageTimer timer(ctx, "evaluate");
      const stereo::EvalResult ev = stereo::evaluate_disparity(disparity.cview(), in.gt.cview(), in.masks);
      json j = io::to_json(ev);
      j["gt"] = in.gt_path;
      rec["eval"] = j;
      // Without --json the numbers would be invisible: one human line on stderr (not with -q).
      const auto& st = tool_.settings();
      if (!st.json && st.report_path.empty() && st.verbosity >= 0) {
        const stereo::RegionErrors* r = ev.find("nonocc") ? ev.find("nonocc") : ev.find("all");
        std::fprintf(stderr,
                     "sgm-depth: %s: %s bad-2 %.2f %% (invalid counted), %.2f %% (estimated), avg err %.3f px, "
                     "density %.1f %%\n",
                     left_name.c_str(), r->region.c_str(), r->bad2_all, r->bad2_est, r->avg_err_est, ev.density);
      }
    }
    if (!in.gt_path.empty() && std::find(opt_.emits.begin(), opt_.emits.end(), Emit::kError) != opt_.emits.end()) {
      out.gt = std::move(in.gt);
      for (auto& m : in.masks)
        if (m.name == "nonocc") out.nonocc = std::move(m.mask);
    }
    describe_depth_folders(item, ctx, out);
    return out;
  }

  // The writers: each output encoded and written atomically (on a worker thread).
  json write(const cli::Item& item, PairOutput& out, cli::ItemContext& ctx) const {
    const OutputSource source{out.match.disparity,
                              out.match.confidence,
                              out.calib.get(),
                              out.left_path,
                              out.gt.data.empty() ? nullptr : &out.gt,
                              &out.nonocc};
    json outs = json::array();
    for (std::size_t slot = 0; slot < opt_.emits.size(); ++slot) {
      const std::string path = output_for(item, ctx, slot);
      if (path.empty()) continue;
      write_output(ctx, path, format_of(path), opt_.emits[slot], source, encode_);
      outs.push_back({{"emit", opt_.emit_names[slot]}, {"path", path}});
    }
    json rec = std::move(out.record);
    rec["outputs"] = outs;
    if (!outs.empty()) rec["output"] = outs.front()["path"];
    return rec;
  }

  cli::Tool tool_;
  Options opt_;
  PairSources sources_;
  EncodeSettings encode_;
  CLI::Option* gt_scale_opt_ = nullptr;
  std::unique_ptr<DepthFolderFiles> depth_folders_;
  std::unique_ptr<PairMatcher> matcher_;  // declared last: destroyed (its pipeline drained) first
};

}  // namespace
}  // namespace s3d::sgm_depth

int main(int argc, char** argv) {
  s3d::sgm_depth::App app;
  return app.run(argc, argv);
}
