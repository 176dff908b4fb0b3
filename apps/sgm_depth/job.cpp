#include "job.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "s3d/cli/atomic_file.hpp"
#include "s3d/geometry/camera.hpp"
#include "s3d/io/stereo_eval.hpp"
#include "s3d/stereo/metrics.hpp"

namespace s3d::sgm_depth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Under --output-dir, each folder that gets depth maps also gets what a reader needs to use them
// (camera-intrinsics.txt, depth-scale.txt: sgm_depth/depth_folder.hpp), in input order, so that of two items
// with different calibrations into one folder it is always the later one that fails.
void describe_depth_folders(const cli::Item& item, cli::ItemContext& ctx, const PairOutput& out, Run& run,
                            const cli::CommonSettings& settings) {
  const Plan& plan = run.plan;
  if (settings.output_dir.empty() || !out.calib) return;
  for (std::size_t slot = 0; slot < plan.emits.size(); ++slot) {
    if (plan.emits[slot] != Emit::kDepth) continue;
    const std::string path = output_for(plan, settings, item, ctx, slot);
    if (path.empty() || path == "-" || cli::is_write_through(path)) continue;
    const std::string format = cli::format_of(path, settings);
    if (format != "pfm" && format != "png") continue;  // the write fails the item with its own message
    const io::PinholeIntrinsics k =
        geometry::left_intrinsics(*out.calib, out.match.disparity.width, out.match.disparity.height);
    run.depth_folders->describe(fs::path(path).parent_path().string(), k,
                                format == "pfm" ? 1.0 : plan.encode.depth_scale);
  }
}

}  // namespace

void prepare_run(Run& run, const std::vector<Device>& devices, const cli::CommonSettings& settings) {
  run.depth_folders = std::make_unique<DepthFolderFiles>(settings.overwrite);
  run.matcher = std::make_unique<PairMatcher>(devices, run.plan.params, run.plan.max_memory);
}

PairOutput match_pair(const cli::Item& item, PairInput& in, cli::ItemContext& ctx, cli::NextItem<PairInput> next,
                      Run& run, const cli::CommonSettings& settings) {
  const Plan& plan = run.plan;
  const std::string left_name = item.inputs.at(0);
  PairOutput out;
  PairsAhead ahead;
  for (const auto& [next_item, next_input] : next.ahead) ahead.emplace_back(next_item->index, &next_input->pair);
  out.match = run.matcher->match(item.index, in.pair, ahead, left_name, ctx);
  out.calib = in.calib;
  out.left_path = in.left_path;
  const io::ImageF& disparity = out.match.disparity;

  json& rec = out.record;
  rec["right"] = item.inputs.at(1);
  rec["width"] = disparity.width;
  rec["height"] = disparity.height;
  rec["bit_depth"] = in.pair.sixteen() ? 16 : 8;
  rec["disparities"] = plan.params.disparities;
  rec["min_disparity"] = plan.params.min_disparity;
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
    if (!settings.json && settings.report_path.empty() && settings.verbosity >= 0) {
      const stereo::RegionErrors* r = ev.find("nonocc") ? ev.find("nonocc") : ev.find("all");
      std::fprintf(stderr,
                   "sgm-depth: %s: %s bad-2 %.2f %% (invalid counted), %.2f %% (estimated), avg err %.3f px, "
                   "density %.1f %%\n",
                   left_name.c_str(), r->region.c_str(), r->bad2_all, r->bad2_est, r->avg_err_est, ev.density);
    }
  }
  if (!in.gt_path.empty() && std::find(plan.emits.begin(), plan.emits.end(), Emit::kError) != plan.emits.end()) {
    out.gt = std::move(in.gt);
    const auto nonocc =
        std::find_if(in.masks.begin(), in.masks.end(), [](const stereo::EvalMask& m) { return m.name == "nonocc"; });
    if (nonocc != in.masks.end()) out.nonocc = std::move(nonocc->mask);
  }
  describe_depth_folders(item, ctx, out, run, settings);
  return out;
}

json write_pair(const cli::Item& item, PairOutput& out, cli::ItemContext& ctx, const Run& run,
                const cli::CommonSettings& settings) {
  const Plan& plan = run.plan;
  const OutputSource source{out.match.disparity,
                            out.match.confidence,
                            out.calib.get(),
                            out.left_path,
                            out.gt.data.empty() ? nullptr : &out.gt,
                            &out.nonocc};
  json outs = json::array();
  for (std::size_t slot = 0; slot < plan.emits.size(); ++slot) {
    const std::string path = output_for(plan, settings, item, ctx, slot);
    if (path.empty()) continue;
    write_output(ctx, path, cli::format_of(path, settings), plan.emits[slot], source, plan.encode);
    outs.push_back({{"emit", plan.emit_names[slot]}, {"path", path}});
  }
  json rec = std::move(out.record);
  rec["density"] = stereo::valid_percent(out.match.disparity.cview());  // here on a worker, not on the handler
  rec["outputs"] = outs;
  if (!outs.empty()) rec["output"] = outs.front()["path"];
  return rec;
}

}  // namespace s3d::sgm_depth
