// nms-filter: non-maximum suppression of a detector's output file (docs/NMS-FILTER.md).
// Options, then three stages: the frame's workers read and group each box file (nms_filter/box_job;
// per image by default), the handler runs s3d::detection NMS on the chosen device in input order, and the
// workers write the surviving records in the input's format, or their 0-based input positions.
#include <memory>
#include <string>

#include "nms_filter/box_job.hpp"
#include "nms_filter/drawn.hpp"
#include "nms_filter/plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/detection/nms.hpp"

using s3d::nms_filter::BoxJob;
using s3d::nms_filter::Clock;
using s3d::nms_filter::KeptBoxes;
using s3d::nms_filter::seconds_since;

namespace {

/// The NMS flags; returns --min-score's option (whether it was given).
CLI::Option* add_nms_flags(CLI::App& app, s3d::nms_filter::Flags& f) {
  const char* g = "NMS";
  app.add_option("--iou", f.iou, "IoU threshold: a box is suppressed iff its IoU with a kept box is > this")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0))
      ->group(g);
  app.add_flag("--iou-ge", f.iou_ge, "suppress at IoU >= threshold instead of > (TensorRT EfficientNMS, mmcv rotated)")
      ->group(g);
  app.add_option("--pixel-offset", f.pixel_offset, "1: legacy +1 areas, (x2-x1+1)(y2-y1+1) (Detectron, old mmcv)")
      ->capture_default_str()
      ->check(CLI::IsMember({0, 1}))
      ->group(g);
  app.add_flag("--per-class", f.per_class,
               "never suppress across classes: add the class field (category_id, class, label...) to the groups")
      ->group(g);
  app.add_option("--group-by", f.group_by,
                 "comma-separated fields whose values form the groups (e.g. image_id,category_id, level); `none` = "
                 "one group per file. Default: per image (image_id, frame, voc file) when the input has one")
      ->type_name("FIELDS")
      ->group(g);
  CLI::Option* min_score =
      app.add_option("--min-score", f.min_score, "drop boxes scored below this before NMS (and, soft-NMS, after decay)")
          ->type_name("S")
          ->group(g);
  app.add_option("--pre-top-k", f.pre_top_k, "per group, keep only the K best-scored boxes before NMS (0 = all)")
      ->type_name("K")
      ->capture_default_str()
      ->group(g);
  app.add_option("--max-dets", f.max_dets, "per image, keep only the N best-scored boxes after NMS (0 = all)")
      ->type_name("N")
      ->capture_default_str()
      ->group(g);
  app.add_option("--method", f.method, "hard NMS, or soft-NMS (Bodla et al. 2017) with linear or Gaussian decay")
      ->capture_default_str()
      ->check(CLI::IsMember({"hard", "soft-linear", "soft-gaussian"}))
      ->group(g);
  app.add_option("--sigma", f.sigma, "Gaussian soft-NMS: weight = exp(-IoU^2 / sigma)")
      ->capture_default_str()
      ->group(g);
  app.add_flag("--rotated", f.rotated,
               "rotated boxes cx,cy,w,h,angle (angle in radians, from +x towards +y: clockwise on an image), "
               "exact polygon IoU")
      ->group(g);
  return min_score;
}

/// Reading, writing and drawing.
void add_io_flags(s3d::cli::Tool& tool, CLI::App& app, s3d::nms_filter::Flags& f) {
  const char* io_group = "Input and output";
  tool.format_help(
      "box format of the input, and so of the output: coco, csv, jsonl, mot, voc (default: from the "
      "extension, the folder or the first line)");
  app.add_flag("--drop-invalid", f.drop_invalid,
               "skip bad records (NaN/inf, missing fields, wrong types) and count them, instead of failing the file")
      ->group(io_group);
  app.add_option("--box-format", f.box_format,
                 "how 4 box numbers are given: xyxy, xywh, cxcywh (default: the format's convention / the column "
                 "names); ENC=c1,c2,c3,c4 names the columns or keys")
      ->type_name("auto|xyxy|xywh|cxcywh[=COLS]")
      ->capture_default_str()
      ->group(io_group);
  app.add_option("--emit", f.emit,
                 "records: the kept records in the input's format, in input order; indices: their 0-based input "
                 "positions, one per line, by descending score; drawn: a folder of PNGs, the kept boxes drawn on "
                 "each image the records name (image_id, frame, file_name...; a voc file's name). A list: "
                 "records,drawn writes both (-o KEPT -o DIR)")
      ->capture_default_str()
      ->group(io_group);
  app.add_flag("--draw-suppressed", f.draw_suppressed, "--emit drawn: the suppressed boxes too, faint")
      ->group(io_group);
  app.add_option("--image-dir", f.image_dir,
                 "--emit drawn: where the images are (default: the input's folder); an id is tried as NAME.png, "
                 ".jpg, .jpeg and zero-padded to 6 (MOT img1/) or 12 digits (COCO 2017)")
      ->type_name("DIR")
      ->group(io_group);
}

void add_examples(s3d::cli::Tool& tool) {
  tool.add_example("nms-filter --iou 0.5 --per-class dets.json -o kept.json",
                   "COCO results: per image and class NMS at IoU 0.5 (torchvision batched_nms)");
  tool.add_example("nms-filter --iou 0.7 --group-by level --emit indices proposals.csv -o -",
                   "RPN proposals (CSV x1,y1,x2,y2,score,level): per-level NMS, kept row indices to stdout");
  tool.add_example("cat det.txt | nms-filter --format mot --iou 0.3 - -o - > det_nms.txt",
                   "MOTChallenge detections, per frame, in a pipe");
  tool.add_example("nms-filter --per-class --emit records,drawn --image-dir val2017/ dets.json -o kept.json -o drawn/",
                   "the kept records, and each image with its kept boxes drawn (class colour, score)");
  tool.add_example("nms-filter --method soft-gaussian --sigma 0.5 --max-dets 100 detection-results/ -o nms/",
                   "a folder of VOC text files: soft-NMS per image, scores rewritten, at most 100 per image");
}

}  // namespace

int main(int argc, char** argv) {
  s3d::cli::Tool tool("nms-filter",
                      "Non-maximum suppression of detection boxes (COCO JSON, CSV, JSON Lines, MOT, VOC text), "
                      "exact torchvision semantics, on GPU or CPU",
                      s3d::cli::ItemSpec{1, {"input"}});
  s3d::nms_filter::Flags f;
  CLI::App& app = tool.app();
  const CLI::Option* min_score_opt = add_nms_flags(app, f);
  add_io_flags(tool, app, f);
  add_examples(tool);

  s3d::nms_filter::Plan plan;
  std::unique_ptr<s3d::detection::NmsEngine> engine;

  tool.on_start([&](const s3d::Device& device) {
    f.min_score_given = min_score_opt->count() > 0;
    plan = s3d::nms_filter::make_plan(f, tool.settings());
    const auto& s = tool.settings();
    if (s.outputs.empty() && s.output_dir.empty())
      throw s3d::InvalidArgument("no output: give -o PATH|TEMPLATE, -o - (stdout) or --output-dir DIR");
    s3d::nms_filter::check_drawn_output(plan, s);
    engine = std::make_unique<s3d::detection::NmsEngine>(device);
  });
  tool.outputs_of([&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    return s3d::nms_filter::planned_outputs(item, ctx, plan);
  });

  tool.aggregate(s3d::cli::sum_of({"boxes_in", "boxes_kept", "dropped_invalid", "groups"}, "", true));

  // Load (worker threads): the output decided, then the box file read and grouped.
  s3d::cli::Stages<BoxJob, KeptBoxes> stages;
  stages.load = [&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    s3d::cli::StageTimer timer(ctx, "read");
    const auto t0 = Clock::now();
    BoxJob job = s3d::nms_filter::load_job(item, ctx, plan, f.per_class);
    job.seconds_read = seconds_since(t0);
    return job;
  };
  // The handler (main thread, input order): NMS on the engine's device.
  stages.handle = [&](const s3d::cli::Item&, BoxJob& job, s3d::cli::ItemContext& ctx, s3d::cli::NextItem<BoxJob>) {
    s3d::cli::StageTimer timer(ctx, "nms");
    const auto t0 = Clock::now();
    KeptBoxes kept = s3d::nms_filter::run_nms(*engine, std::move(job), plan.params);
    kept.seconds_nms = seconds_since(t0);
    return kept;
  };
  // Write (worker threads): the kept records or indices, then the record's fields.
  stages.write = [&](const s3d::cli::Item&, KeptBoxes& kept, s3d::cli::ItemContext& ctx) {
    return s3d::nms_filter::write_job(ctx, kept, plan, engine->device());
  };
  return tool.run(argc, argv, std::move(stages));
}
