// sgm-depth: rectified stereo pairs -> disparity, depth, point cloud, confidence, colour picture.
// Thin: the matcher is s3d::stereo, the formats s3d::io, the batch/flags/exit codes the s3d::cli frame.
// Over a batch, pairs are read ahead on a second thread and, on a GPU, the next pair is uploaded while the
// current one is matched (stereo::SgmPipeline); outputs and errors stay per item, in input order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "s3d/cli/inputs.hpp"
#include "s3d/cli/shard.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/geometry/disparity_geometry.hpp"
#include "s3d/io/calib.hpp"
#include "s3d/io/colormap.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/pfm.hpp"
#include "s3d/io/ply.hpp"
#include "s3d/io/stereo_eval.hpp"
#include "s3d/stereo/metrics.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_pipeline.hpp"
#include "sgm_depth/datasets.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace s3d::sgm_depth {
namespace {

enum class Emit { kDisparity, kDepth, kCloud, kConfidence, kColor };

Emit parse_emit(const std::string& s) {
  if (s == "disparity") return Emit::kDisparity;
  if (s == "depth") return Emit::kDepth;
  if (s == "cloud") return Emit::kCloud;
  if (s == "confidence") return Emit::kConfidence;
  if (s == "color" || s == "colour") return Emit::kColor;
  throw InvalidArgument("--emit " + s + ": expected disparity, depth, cloud, confidence or color");
}

// Default name suffix of each output under --output-dir (only disparity keeps the bare stem).
const char* default_suffix(Emit e) {
  switch (e) {
    case Emit::kDisparity: return ".pfm";
    case Emit::kDepth: return "_depth.pfm";
    case Emit::kCloud: return "_cloud.ply";
    case Emit::kConfidence: return "_confidence.pfm";
    case Emit::kColor: return "_color.png";
  }
  return "";
}

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
};

// Per-region sums of the metrics over the evaluated items of the batch, for the summary record.
struct EvalTotals {
  std::mutex mutex;
  std::size_t items = 0;
  std::map<std::string, std::map<std::string, double>> sums;  // region -> metric -> sum of per-item values
  std::map<std::string, std::size_t> counts;                   // region -> items with a finite value
  std::map<std::string, std::size_t> gt_pixels, estimated, bad2_pixels_all;
  void add(const stereo::EvalResult& r) {
    std::lock_guard<std::mutex> lock(mutex);
    ++items;
    for (const auto& e : r.regions) {
      if (e.gt_pixels == 0) continue;
      auto& s = sums[e.region];
      s["bad1_all"] += e.bad1_all;
      s["bad2_all"] += e.bad2_all;
      s["d1_all"] += e.d1_all;
      s["density"] += e.density;
      if (e.estimated > 0) {
        s["bad1_est"] += e.bad1_est;
        s["bad2_est"] += e.bad2_est;
        s["d1_est"] += e.d1_est;
        s["avg_err_est"] += e.avg_err_est;
      }
      ++counts[e.region];
    }
  }
  json to_json() {
    std::lock_guard<std::mutex> lock(mutex);
    json j{{"items", items}};
    json regions = json::object();
    for (auto& [region, s] : sums) {
      json r = json::object();
      for (auto& [k, v] : s) r["mean_" + k] = v / static_cast<double>(counts[region]);
      r["items"] = counts[region];
      regions[region] = r;
    }
    j["regions"] = regions;
    return j;
  }
};

// The images of one item, decoded (on the read-ahead thread or in place). Exactly the checks and messages
// of a plain read: the left image, the right image, then their sizes.
struct LoadedPair {
  int left_bits = 8, right_bits = 8;
  io::ImageU16 left16, right16;  // pixels dropped for an 8-bit pair (sizes kept for messages)
  io::ImageU8 left8, right8;     // the 8-bit pair (both inputs 8-bit)
  bool sixteen() const { return left_bits == 16 || right_bits == 16; }
  int width() const { return left16.width; }
  int height() const { return left16.height; }
};

template <typename T>
std::string size_text(const io::Image<T>& img) {
  return std::to_string(img.width) + "x" + std::to_string(img.height);
}

// io errors start with the path they were given (for `-`, a temp file): keep only what follows it.
std::string strip_path(const std::string& message, const std::string& path) {
  if (message.rfind(path + ": ", 0) == 0) return message.substr(path.size() + 2);
  return message;
}

LoadedPair load_pair(const std::string& left_name, const std::string& left_path, const std::string& right_name,
                     const std::string& right_path) {
  LoadedPair p;
  try {
    p.left16 = io::read_grey16(left_path, &p.left_bits);
  } catch (const IoError& e) {
    throw IoError(left_name + ": " + strip_path(e.what(), left_path));
  }
  try {
    p.right16 = io::read_grey16(right_path, &p.right_bits);
  } catch (const IoError& e) {
    throw IoError(right_name + ": " + strip_path(e.what(), right_path));
  }
  if (p.left16.width != p.right16.width || p.left16.height != p.right16.height)
    throw DataError(left_name + ": " + size_text(p.left16) + " but " + right_name + " is " + size_text(p.right16));
  if (!p.sixteen()) {
    const int w = p.width(), h = p.height();
    p.left8 = io::ImageU8(w, h);
    p.right8 = io::ImageU8(w, h);
    std::transform(p.left16.data.begin(), p.left16.data.end(), p.left8.data.begin(), [](std::uint16_t v) { return std::uint8_t(v); });
    std::transform(p.right16.data.begin(), p.right16.data.end(), p.right8.data.begin(), [](std::uint16_t v) { return std::uint8_t(v); });
    p.left16.data = {};
    p.right16.data = {};
  }
  return p;
}

class App {
 public:
  App()
      : tool_("sgm-depth", "rectified stereo pairs -> disparity / depth / point cloud (census + semi-global matching)",
              cli::ItemSpec{2, {"left", "right"}}) {
    add_options();
    tool_.on_start([this](const Device& d) { start(d); });
    tool_.outputs_of([this](const cli::Item& item, cli::ItemContext& ctx) { return outputs(item, ctx); });
    tool_.on_summary([this](json& s) {
      if (totals_.items > 0) s["eval"] = totals_.to_json();
    });
  }

  int run(int argc, char** argv) {
    return tool_.run(argc, argv, [this](const cli::Item& item, cli::ItemContext& ctx) { return process(item, ctx); });
  }

  double gt_scale_hint() const { return opt_.gt_scale; }
  void expand_arguments(cli::ExpandArgument fn) {
    expand_ = fn;
    tool_.expand_arguments(std::move(fn));
  }

 private:
  void add_options() {
    CLI::App& app = tool_.app();
    stereo::SgmParams& p = opt_.params;
    const char* g = "Matching";
    app.add_option("-D,--disparities", p.disparities, "number of disparities searched (16..1024)")
        ->capture_default_str()->group(g);
    app.add_option("--min-disparity", p.min_disparity, "smallest disparity (pixels, may be negative)")
        ->capture_default_str()->group(g);
    app.add_option("--paths", p.paths, "aggregation paths")->check(CLI::IsMember({4, 8}))->capture_default_str()->group(g);
    app.add_option("--p1", p.p1, "penalty for a disparity change of 1 (census bits)")->capture_default_str()->group(g);
    app.add_option("--p2", p.p2, "penalty for larger changes (> p1)")->capture_default_str()->group(g);
    app.add_option("--census", opt_.census, "census window: 9x7 (full) or cs9x7 (centre-symmetric), or [cs]WxH")
        ->capture_default_str()->group(g);
    app.add_option("--uniqueness", p.uniqueness, "uniqueness margin, percent (0 = off)")->capture_default_str()->group(g);
    auto* sub = app.add_flag("--subpixel", opt_.subpixel_on, std::string("parabola subpixel refinement") +
                                 (p.subpixel ? " (default)" : ""))->group(g);
    app.add_flag("--no-subpixel", opt_.subpixel_off, "integer disparities")->excludes(sub)->group(g);
    app.add_option("--lr-check", opt_.lr_tol, "left-right check with tolerance TOL pixels")
        ->type_name("TOL")->capture_default_str()->group(g);
    app.add_flag("--no-lr-check", opt_.no_lr_check, "no left-right check")->excludes("--lr-check")->group(g);
    auto* med = app.add_flag("--median", opt_.median_on, std::string("3x3 median filter") + (p.median ? " (default)" : ""))
                    ->group(g);
    app.add_flag("--no-median", opt_.median_off, "no median filter")->excludes(med)->group(g);
    app.add_option("--speckle-size", p.speckle_size, "invalidate regions of <= N pixels (0 = off)")
        ->capture_default_str()->group(g);
    app.add_option("--speckle-range", p.speckle_range, "max disparity step inside one speckle region (pixels)")
        ->capture_default_str()->group(g);
    auto* fill = app.add_flag("--fill", opt_.fill_on,
                              std::string("fill occlusions: a run of invalid pixels between valid disparities l and r, no wider "
                                          "than |l - r| + 2 px, takes the smaller (farther) of the two; other invalid "
                                          "pixels stay invalid; confidence stays 0 there") +
                                  (p.fill ? " (default)" : ""))
                     ->group(g);
    app.add_flag("--no-fill", opt_.fill_off, std::string("leave every invalid pixel invalid") + (p.fill ? "" : " (default)"))
        ->excludes(fill)->group(g);

    const char* o = "Outputs";
    app.add_option("--emit", opt_.emit_names,
                   "output to write, repeatable, one -o each (in order): disparity, depth, cloud, confidence, color")
        ->type_name("WHAT")->group(o);
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
    app.add_option("--calib", opt_.calib,
                   "calibration for depth/cloud: KITTI P_rect_02/03 file, OpenCV Q (text or YAML), Middlebury calib.txt, "
                   "or focal_px=F,baseline_m=B")
        ->type_name("FILE")->group(o);
    app.add_option("--colormap", opt_.colormap, "colour map of --emit color")
        ->check(CLI::IsMember({"turbo", "jet", "grey"}))->capture_default_str()->group(o);
    app.add_option("--max-depth", opt_.max_depth, "drop cloud points farther than this (metres; 0 = keep all)")
        ->group(o);
    app.add_option("--ply-format", opt_.ply_format, "PLY encoding")
        ->check(CLI::IsMember({"binary", "ascii"}))->capture_default_str()->group(o);

    const char* e = "Evaluation";
    app.add_option("--eval", opt_.eval,
                   "ground-truth disparity (PFM, KITTI 16-bit PNG, or 8-bit Middlebury PNG): adds bad-1/bad-2/avg "
                   "error/D1/density to the record (also a manifest's `gt` key)")
        ->type_name("GT")->group(e);
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
    device_ = device;
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
      if (!s.outputs.empty() || !s.output_dir.empty()) opt_.emit_names.push_back("disparity");
      else if (opt_.eval.empty() && s.manifest.empty())
        throw InvalidArgument("no output: give -o FILE, --output-dir DIR, or --eval GT");
    }
    for (const auto& n : opt_.emit_names) opt_.emits.push_back(parse_emit(n));
    p.confidence = std::find(opt_.emits.begin(), opt_.emits.end(), Emit::kConfidence) != opt_.emits.end();
    p.validate();  // before any input is read: a bad combination is a usage error (exit 2)
    if (s.outputs.size() > opt_.emits.size())
      throw InvalidArgument(std::to_string(s.outputs.size()) + " outputs (-o) for " + std::to_string(opt_.emits.size()) +
                            " --emit: give one -o per --emit");
    if (s.outputs.size() < opt_.emits.size() && s.output_dir.empty())
      throw InvalidArgument("--emit " + opt_.emit_names[s.outputs.size()] + " has no -o (give one -o per --emit, or --output-dir)");
    const bool needs_calib = std::any_of(opt_.emits.begin(), opt_.emits.end(),
                                         [](Emit e) { return e == Emit::kDepth || e == Emit::kCloud; });
    if (!opt_.calib.empty()) {
      calib_ = std::make_unique<io::StereoCalibration>(io::read_calibration(opt_.calib));
    } else if (needs_calib && s.manifest.empty()) {
      throw InvalidArgument("--emit depth/cloud needs --calib FILE (or a manifest `calib` key)");
    }
    check_depth_png_options();
    if (opt_.png_encoding == "mm" &&
        std::any_of(opt_.emits.begin(), opt_.emits.end(), [](Emit e) { return e == Emit::kDisparity; })) {
      // mm is a depth encoding; a disparity PNG with it would be meaningless, unless no disparity PNG is written.
      for (std::size_t i = 0; i < opt_.emits.size() && i < s.outputs.size(); ++i)
        if (opt_.emits[i] == Emit::kDisparity && format_of(s.outputs[i]) == "png")
          throw InvalidArgument("--png-encoding mm is for depth; disparity PNGs use kitti or x16");
    }
    plan_read_ahead();
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

  // The batch's items in the frame's order (this shard), so that process() can start on the next one.
  // Rebuilt from the same settings with the frame's own functions; a list or manifest that is not a regular
  // file (stdin, a pipe) cannot be read twice and gets no read-ahead. Only a speed-up: process() checks that
  // an item read ahead is the one it was given.
  void plan_read_ahead() {
    const auto& s = tool_.settings();
    const cli::ItemSpec spec{2, {"left", "right"}};
    auto regular = [](const std::string& path) {
      std::error_code ec;
      return path != "-" && fs::is_regular_file(path, ec);
    };
    try {
      std::vector<cli::Item> all;
      if (!s.positional.empty()) {
        all = cli::items_from_paths(s.positional, spec, expand_);
      } else if (!s.input_list.empty() && regular(s.input_list)) {
        std::ifstream in(s.input_list);
        all = cli::items_from_list(in, s.input_list, spec);
      } else if (!s.manifest.empty() && regular(s.manifest)) {
        std::ifstream in(s.manifest);
        all = cli::items_from_manifest(in, s.manifest, spec);
      }
      batch_ = cli::select_shard(all, cli::parse_shard(s.shard, s.shard_count));
    } catch (...) {
      batch_.clear();  // the frame reports the problem itself
    }
    for (std::size_t k = 0; k < batch_.size(); ++k) batch_position_[batch_[k].index] = k;
  }

  // The item after `item` in this shard's order; nullptr at the end or when unknown.
  const cli::Item* next_item(const cli::Item& item) const {
    const auto it = batch_position_.find(item.index);
    if (it == batch_position_.end() || it->second + 1 >= batch_.size()) return nullptr;
    const cli::Item& next = batch_[it->second + 1];
    for (const auto& in : next.inputs)
      if (in == "-") return nullptr;  // stdin is copied by the frame when the item starts
    return &next;
  }

  // Starts decoding `item`'s images on a second thread, unless already started.
  void read_ahead(const cli::Item& item) {
    if (ahead_.count(item.index)) return;
    const std::string l = item.inputs.at(0), r = item.inputs.at(1);
    ahead_[item.index] = {item.inputs, std::async(std::launch::async, [l, r] { return load_pair(l, l, r, r); }).share()};
  }

  // The images of `item`: read ahead when they were, else read now. Errors are the plain read's.
  std::shared_future<LoadedPair> take_pair(const cli::Item& item, cli::ItemContext& ctx) {
    std::shared_future<LoadedPair> pair;
    if (auto it = ahead_.find(item.index); it != ahead_.end() && it->second.inputs == item.inputs) pair = it->second.pair;
    ahead_.erase(ahead_.begin(), ahead_.upper_bound(item.index));  // this item's and older ones (skipped items)
    if (!pair.valid()) {
      std::promise<LoadedPair> now;
      try {
        const std::string& l = item.inputs.at(0);
        const std::string& r = item.inputs.at(1);
        now.set_value(load_pair(l, ctx.readable_path(l), r, ctx.readable_path(r)));
      } catch (...) {
        now.set_exception(std::current_exception());
      }
      pair = now.get_future().share();
    }
    return pair;
  }

  // Queues a decoded pair on the pipeline, remembering which item it belongs to.
  void submit(const LoadedPair& p, std::size_t index) {
    if (p.sixteen()) pipeline_->submit(p.left16.cview(), p.right16.cview());
    else pipeline_->submit(p.left8.cview(), p.right8.cview());
    queued_.push_back(index);
  }

  // The format of an output path: --format wins, else the extension (lower case, no dot).
  std::string format_of(const std::string& path) const {
    const auto& s = tool_.settings();
    if (!s.format.empty()) return lower(s.format);
    std::string e = lower(fs::path(path).extension().string());
    return e.empty() ? "" : e.substr(1);
  }

  std::string output_for(const cli::Item& item, cli::ItemContext& ctx, std::size_t slot) const {
    const auto& s = tool_.settings();
    const Emit e = opt_.emits[slot];
    // Dataset records carry a name (`cones`, `000005_10`): use it rather than the left image's stem (`imL`).
    if (slot >= s.outputs.size() && !s.output_dir.empty() && item.fields.is_object() && item.fields.contains("name") &&
        item.fields["name"].is_string())
      return (fs::path(s.output_dir) / (item.fields["name"].get<std::string>() + default_suffix(e))).string();
    return ctx.output_path(slot, default_suffix(e));
  }

  std::vector<std::string> outputs(const cli::Item& item, cli::ItemContext& ctx) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < opt_.emits.size(); ++i) out.push_back(output_for(item, ctx, i));
    return out;
  }

  static std::string field(const cli::Item& item, const char* key) {
    if (item.fields.is_object() && item.fields.contains(key) && item.fields[key].is_string())
      return item.fields[key].get<std::string>();
    return "";
  }

  json process(const cli::Item& item, cli::ItemContext& ctx) {
    const std::string& left_name = item.inputs.at(0);
    const std::string& right_name = item.inputs.at(1);
    // 1. Inputs. Everything that can fail on the data happens before the first output is written.
    const std::shared_future<LoadedPair> loaded = take_pair(item, ctx);
    const LoadedPair& pair = loaded.get();  // the read's own exception, as without read-ahead
    const std::string left_path = ctx.readable_path(left_name);  // the cloud's colours are read from it
    const io::ImageU16& left16 = pair.left16;
    const int w = pair.width(), h = pair.height();

    std::unique_ptr<io::StereoCalibration> item_calib;
    const io::StereoCalibration* calib = calib_.get();
    if (const std::string c = field(item, "calib"); !c.empty() && opt_.calib.empty()) {
      item_calib = std::make_unique<io::StereoCalibration>(io::read_calibration(c));
      calib = item_calib.get();
    }
    const bool needs_calib = std::any_of(opt_.emits.begin(), opt_.emits.end(),
                                         [](Emit e) { return e == Emit::kDepth || e == Emit::kCloud; });
    if (needs_calib && !calib) throw DataError(left_name + ": --emit depth/cloud needs a calibration (--calib or `calib`)");

    std::string gt_path = opt_.eval.empty() ? field(item, "gt") : opt_.eval;
    io::ImageF gt;
    std::vector<stereo::EvalMask> masks;
    if (!gt_path.empty()) {
      double scale = opt_.gt_scale;
      if (scale <= 0.0 && item.fields.is_object() && item.fields.contains("gt_scale") && item.fields["gt_scale"].is_number())
        scale = item.fields["gt_scale"].get<double>();
      gt = io::read_disparity(gt_path, scale);
      if (gt.width != w || gt.height != h)
        throw DataError(gt_path + ": ground truth is " + size_text(gt) + " but " + left_name + " is " + size_text(left16));
      masks = io::find_masks(gt_path, w, h);
    }

    // 2. Match. The pipeline (engine + 2 slots) is built once per image size and reused over the batch.
    if (!pipeline_ || pipeline_->width() != w || pipeline_->height() != h) {
      pipeline_.reset();
      queued_.clear();
      try {
        pipeline_ = std::make_unique<stereo::SgmPipeline>(device_, opt_.params, w, h, 2);
      } catch (const InvalidArgument& e) {
        // D or the window does not fit this image: a property of this item, not of the command line.
        throw DataError(left_name + ": " + e.what());
      }
    }
    // A pair queued for an item that never came (skipped, or failed before matching) is dropped.
    if (!queued_.empty() && queued_.front() != item.index) {
      pipeline_->drain();
      queued_.clear();
    }
    if (queued_.empty()) submit(pair, item.index);
    // While this pair is matched, queue the next one: on a GPU its upload overlaps this compute and its
    // compute our writing of this item's outputs (on the CPU, submit computes it: the work only moves
    // earlier). The images after it are decoded meanwhile on the second thread.
    if (const cli::Item* next = next_item(item)) {
      read_ahead(*next);
      if (!pipeline_->full()) {
        const LoadedPair* np = nullptr;
        try {
          np = &ahead_.at(next->index).pair.get();
        } catch (...) {
          // an unreadable or mismatched next pair: its error is reported when its turn comes
        }
        if (np && np->width() == w && np->height() == h) submit(*np, next->index);
        if (const cli::Item* after = next_item(*next)) read_ahead(*after);
      }
    }
    stereo::SgmResult result;
    pipeline_->retrieve(result);
    queued_.pop_front();
    const bool sixteen = pair.sixteen();
    io::ImageF disparity(w, h);
    disparity.data = std::move(result.disparity);

    json rec = json::object();
    rec["right"] = right_name;
    rec["width"] = w;
    rec["height"] = h;
    rec["bit_depth"] = sixteen ? 16 : 8;
    rec["disparities"] = opt_.params.disparities;
    rec["min_disparity"] = opt_.params.min_disparity;
    std::size_t valid = 0;
    for (float d : disparity.data) valid += std::isfinite(d);
    rec["density"] = 100.0 * static_cast<double>(valid) / static_cast<double>(disparity.pixels());
    if (calib) rec["calib"] = {{"source", calib->source}, {"format", calib->format}, {"focal_px", calib->focal_px},
                               {"baseline_m", calib->baseline_m}};

    if (!gt_path.empty()) {
      const stereo::EvalResult ev = stereo::evaluate_disparity(disparity.cview(), gt.cview(), masks);
      json j = io::to_json(ev);
      j["gt"] = gt_path;
      rec["eval"] = j;
      totals_.add(ev);
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

    // 3. Outputs, each atomic.
    json outs = json::array();
    for (std::size_t slot = 0; slot < opt_.emits.size(); ++slot) {
      const std::string path = output_for(item, ctx, slot);
      if (path.empty()) continue;
      const Emit e = opt_.emits[slot];
      std::string fmt = format_of(path);
      write_output(ctx, path, fmt, e, disparity, result.confidence, calib, left_path);
      outs.push_back({{"emit", opt_.emit_names[slot]}, {"path", path}});
    }
    rec["outputs"] = outs;
    if (!outs.empty()) rec["output"] = outs.front()["path"];
    return rec;
  }

  void write_output(cli::ItemContext& ctx, const std::string& path, const std::string& fmt, Emit e,
                    const io::ImageF& disparity, const std::vector<float>& confidence,
                    const io::StereoCalibration* calib, const std::string& left_path) {
    const int w = disparity.width, h = disparity.height;
    auto bad_format = [&](const char* allowed) {
      return InvalidArgument(path + ": cannot write " + std::string(emit_name(e)) + " as '" + fmt + "' (use " + allowed + ")");
    };
    switch (e) {
      case Emit::kDisparity: {
        if (fmt == "pfm") {
          ctx.write_atomically(path, [&](const std::string& tmp) { io::write_pfm(tmp, disparity); });
        } else if (fmt == "png") {
          const io::PngEncoding enc = opt_.png_encoding.empty() ? io::PngEncoding::kKitti : io::parse_png_encoding(opt_.png_encoding);
          const io::ImageU16 img = io::encode_png16(disparity, enc);
          ctx.write_atomically(path, [&](const std::string& tmp) { io::write_image(tmp, img); });
        } else {
          throw bad_format(".pfm or .png");
        }
        break;
      }
      case Emit::kDepth: {
        io::ImageF depth(w, h);
        geometry::depth_from_disparity(disparity.cview(), *calib, depth.view());
        if (fmt == "pfm") {
          ctx.write_atomically(path, [&](const std::string& tmp) { io::write_pfm(tmp, depth); });
        } else if (fmt == "png") {
          const io::ImageU16 img = io::encode_depth_png16(depth, opt_.depth_scale_value);
          ctx.write_atomically(path, [&](const std::string& tmp) { io::write_image(tmp, img); });
        } else {
          throw bad_format(".pfm (metres) or .png (depth * --depth-scale)");
        }
        break;
      }
      case Emit::kCloud: {
        if (fmt != "ply") throw bad_format(".ply");
        const io::ImageU8 colour = io::read_rgb8(left_path);
        const geometry::ColourView colour_view{colour.data.data(), colour.width, colour.height, colour.channels};
        const PointCloud cloud = geometry::cloud_from_disparity(disparity.cview(), *calib, &colour_view,
                                                                opt_.max_depth > 0 ? opt_.max_depth : io::kInvalid);
        const io::PlyFormat pf = opt_.ply_format == "ascii" ? io::PlyFormat::kAscii : io::PlyFormat::kBinaryLittleEndian;
        ctx.write_atomically(path, [&](const std::string& tmp) { io::write_ply(tmp, cloud, pf); });
        break;
      }
      case Emit::kConfidence: {
        io::ImageF conf(w, h);
        conf.data = confidence;
        if (conf.data.size() != conf.pixels()) throw DataError(path + ": the matcher returned no confidence");
        if (fmt == "pfm") {
          ctx.write_atomically(path, [&](const std::string& tmp) { io::write_pfm(tmp, conf); });
        } else if (fmt == "png") {
          io::ImageU8 img(w, h);
          for (std::size_t i = 0; i < img.data.size(); ++i)
            img.data[i] = static_cast<std::uint8_t>(std::lround(std::clamp(conf.data[i], 0.0f, 1.0f) * 255.0f));
          ctx.write_atomically(path, [&](const std::string& tmp) { io::write_image(tmp, img); });
        } else {
          throw bad_format(".pfm or .png (confidence * 255)");
        }
        break;
      }
      case Emit::kColor: {
        if (fmt != "png" && fmt != "jpg" && fmt != "ppm" && fmt != "bmp") throw bad_format(".png");
        const float lo = static_cast<float>(opt_.params.min_disparity);
        const float hi = lo + static_cast<float>(opt_.params.disparities);
        const io::ImageU8 img = io::colorize(disparity, lo, hi, io::parse_colormap(opt_.colormap));
        ctx.write_atomically(path, [&](const std::string& tmp) { io::write_image(tmp, img); });
        break;
      }
    }
  }

  static const char* emit_name(Emit e) {
    switch (e) {
      case Emit::kDisparity: return "disparity";
      case Emit::kDepth: return "depth";
      case Emit::kCloud: return "cloud";
      case Emit::kConfidence: return "confidence";
      case Emit::kColor: return "color";
    }
    return "?";
  }

  cli::Tool tool_;
  Options opt_;
  Device device_;
  std::unique_ptr<io::StereoCalibration> calib_;
  EvalTotals totals_;
  // Batch read-ahead and pipelining (see plan_read_ahead / process).
  cli::ExpandArgument expand_;
  std::vector<cli::Item> batch_;
  std::unordered_map<std::size_t, std::size_t> batch_position_;  // item index -> position in batch_
  struct Ahead {
    std::vector<std::string> inputs;
    std::shared_future<LoadedPair> pair;
  };
  std::map<std::size_t, Ahead> ahead_;  // by item index; futures of std::async join when destroyed
  std::deque<std::size_t> queued_;      // item index of each pair in the pipeline, oldest first
  std::unique_ptr<stereo::SgmPipeline> pipeline_;  // declared last: destroyed (drained) first
};

}  // namespace
}  // namespace s3d::sgm_depth

int main(int argc, char** argv) {
  // A dataset folder among the positional inputs stands for its pairs (see sgm_depth/datasets.hpp).
  s3d::sgm_depth::App app;
  app.expand_arguments([&app](const std::string& arg) -> std::optional<std::vector<nlohmann::json>> {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) return std::nullopt;
    return s3d::sgm_depth::dataset_items(arg, app.gt_scale_hint());
  });
  return app.run(argc, argv);
}
