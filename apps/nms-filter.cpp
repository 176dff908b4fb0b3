// nms-filter: non-maximum suppression of a detector's output file (docs/NMS-FILTER.md).
// Reads boxes (s3d::io box formats), groups them (per image by default), runs s3d::detection NMS on the
// chosen device, and writes the surviving records in the input's format or their 0-based input positions.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/detection/nms.hpp"
#include "s3d/io/boxes.hpp"

namespace fs = std::filesystem;

namespace {

using s3d::io::BoxFileFormat;

/// The tool's own flags (issue 3), as given.
struct Flags {
  float iou = 0.5f;
  bool iou_ge = false;
  int pixel_offset = 0;
  bool per_class = false;
  std::string group_by;  // "" = default (per image when the input has an image field), "none", or a list
  float min_score = 0.f;
  bool min_score_given = false;
  std::int64_t pre_top_k = 0;
  std::int64_t max_dets = 0;
  std::string method = "hard";
  float sigma = 0.5f;
  bool rotated = false;
  bool drop_invalid = false;
  std::string box_format = "auto";
  std::string emit = "records";
};

/// Flags turned into library settings (checked once, before any input is read).
struct Plan {
  s3d::detection::NmsParams params;
  s3d::io::BoxReadOptions read;
  std::optional<BoxFileFormat> format;  // --format
  bool group_default = true;            // no --group-by: per image when there is an image field
  std::vector<std::string> group_fields;
  bool emit_indices = false;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

Plan make_plan(const Flags& f, const s3d::cli::CommonSettings& common) {
  Plan p;
  auto& np = p.params;
  np.iou_threshold = f.iou;
  np.suppress_at_equal = f.iou_ge;
  np.pixel_offset = f.pixel_offset;
  if (f.method == "hard") np.method = s3d::detection::NmsMethod::kHard;
  else if (f.method == "soft-linear") np.method = s3d::detection::NmsMethod::kSoftLinear;
  else if (f.method == "soft-gaussian") np.method = s3d::detection::NmsMethod::kSoftGaussian;
  else throw s3d::InvalidArgument("--method: expected hard, soft-linear or soft-gaussian, got '" + f.method + "'");
  np.sigma = f.sigma;
  if (f.min_score_given) {
    S3D_EXPECTS(!std::isnan(f.min_score), "--min-score must be a number");
    np.min_score = f.min_score;
    // Soft-NMS: a decayed score below --min-score is dropped too (the same floor before and after decay).
    if (np.method != s3d::detection::NmsMethod::kHard && f.min_score >= 0.f) np.soft_min_score = f.min_score;
  }
  np.pre_top_k = f.pre_top_k;
  np.max_dets = f.max_dets;
  np.rotated = f.rotated;
  S3D_EXPECTS(f.pre_top_k >= 0, "--pre-top-k must be >= 0 (0 = all)");
  S3D_EXPECTS(f.max_dets >= 0, "--max-dets must be >= 0 (0 = unlimited)");
  np.validate();

  // --box-format ENC or ENC=c1,c2,c3,c4 (column/key names of the box numbers).
  std::string enc = f.box_format;
  if (auto eq = enc.find('='); eq != std::string::npos) {
    p.read.box_fields = split_list(enc.substr(eq + 1));
    enc = enc.substr(0, eq);
    const std::size_t want = f.rotated ? 5 : 4;
    S3D_EXPECTS(p.read.box_fields.size() == want, "--box-format: " + std::to_string(want) + " column names expected after '=', got " +
                                                      std::to_string(p.read.box_fields.size()));
  }
  p.read.encoding = s3d::io::parse_box_encoding(enc.empty() ? "auto" : enc);
  p.read.rotated = f.rotated;
  p.read.drop_invalid = f.drop_invalid;

  if (!f.group_by.empty()) {
    p.group_default = false;
    if (f.group_by != "none") p.group_fields = split_list(f.group_by);
    S3D_EXPECTS(f.group_by == "none" || !p.group_fields.empty(), "--group-by: give field names or `none`");
    p.read.key_fields = p.group_fields;
  }
  if (!common.format.empty()) p.format = s3d::io::parse_box_file_format(common.format);
  if (f.emit == "indices") p.emit_indices = true;
  else S3D_EXPECTS(f.emit == "records", "--emit: expected records or indices, got '" + f.emit + "'");
  if (f.rotated && p.format)
    S3D_EXPECTS(*p.format != BoxFileFormat::kMot && *p.format != BoxFileFormat::kVoc,
                "--rotated needs coco, csv or jsonl input (" + s3d::io::to_string(*p.format) + " has no angle)");
  return p;
}

/// The input's format (cheap: extension, folder, or the first line).
BoxFileFormat input_format(const std::string& path, const Plan& plan) {
  if (plan.format) return *plan.format;
  return s3d::io::detect_box_file_format(path);
}

std::string default_extension(BoxFileFormat format, bool folder, bool indices) {
  if (indices) return ".keep.txt";
  switch (format) {
    case BoxFileFormat::kCocoJson: return ".json";
    case BoxFileFormat::kCsv: return ".csv";
    case BoxFileFormat::kJsonLines: return ".jsonl";
    case BoxFileFormat::kMot: return ".txt";
    case BoxFileFormat::kVoc: return folder ? "" : ".txt";
  }
  return "";
}

bool is_folder(const std::string& path) {
  std::error_code ec;
  return path != "-" && fs::is_directory(path, ec);
}

/// The .txt names a voc folder will be written with (those of the input folder).
std::vector<std::string> voc_files(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_regular_file() && e.path().extension() == ".txt") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Output paths of one item: one file, or the files of a voc folder.
std::vector<std::string> planned_outputs(const s3d::cli::Item& item, s3d::cli::ItemContext& ctx, const Plan& plan) {
  const std::string& input = item.inputs.front();
  const bool folder = is_folder(input);
  BoxFileFormat format = plan.format.value_or(BoxFileFormat::kCsv);
  if (!plan.emit_indices && input != "-") format = input_format(input, plan);
  const std::string out = ctx.output_path(0, default_extension(format, folder, plan.emit_indices));
  if (out.empty() || out == "-" || plan.emit_indices || !folder) return {out};
  std::vector<std::string> files;
  for (const auto& name : voc_files(input)) files.push_back((fs::path(out) / name).string());
  return files;
}

void write_text(s3d::cli::ItemContext& ctx, const std::string& path, const std::string& content) {
  ctx.write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw s3d::IoError(path + ": cannot create");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) throw s3d::IoError(path + ": write failed");
  });
}

struct Totals {
  std::size_t files = 0, boxes_in = 0, boxes_kept = 0, dropped_invalid = 0, groups = 0;
};

}  // namespace

int main(int argc, char** argv) {
  s3d::cli::Tool tool("nms-filter",
                      "Non-maximum suppression of detection boxes (COCO JSON, CSV, JSON Lines, MOT, VOC text), "
                      "exact torchvision semantics, on GPU or CPU",
                      s3d::cli::ItemSpec{1, {"input"}});
  Flags f;
  CLI::App& app = tool.app();
  const char* g = "NMS";
  app.add_option("--iou", f.iou, "IoU threshold: a box is suppressed iff its IoU with a kept box is > this")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0))->group(g);
  app.add_flag("--iou-ge", f.iou_ge, "suppress at IoU >= threshold instead of > (TensorRT EfficientNMS, mmcv rotated)")
      ->group(g);
  app.add_option("--pixel-offset", f.pixel_offset, "1: legacy +1 areas, (x2-x1+1)(y2-y1+1) (Detectron, old mmcv)")
      ->capture_default_str()->check(CLI::IsMember({0, 1}))->group(g);
  app.add_flag("--per-class", f.per_class,
               "never suppress across classes: add the class field (category_id, class, label...) to the groups")
      ->group(g);
  app.add_option("--group-by", f.group_by,
                 "comma-separated fields whose values form the groups (e.g. image_id,category_id, level); `none` = "
                 "one group per file. Default: per image (image_id, frame, voc file) when the input has one")
      ->type_name("FIELDS")->group(g);
  CLI::Option* min_score_opt = app.add_option("--min-score", f.min_score, "drop boxes scored below this before NMS (and, soft-NMS, after decay)")
      ->type_name("S")->group(g);
  app.add_option("--pre-top-k", f.pre_top_k, "per group, keep only the K best-scored boxes before NMS (0 = all)")
      ->type_name("K")->capture_default_str()->group(g);
  app.add_option("--max-dets", f.max_dets, "per image, keep only the N best-scored boxes after NMS (0 = all)")
      ->type_name("N")->capture_default_str()->group(g);
  app.add_option("--method", f.method, "hard NMS, or soft-NMS (Bodla et al. 2017) with linear or Gaussian decay")
      ->capture_default_str()->check(CLI::IsMember({"hard", "soft-linear", "soft-gaussian"}))->group(g);
  app.add_option("--sigma", f.sigma, "Gaussian soft-NMS: weight = exp(-IoU^2 / sigma)")
      ->capture_default_str()->group(g);
  app.add_flag("--rotated", f.rotated,
               "rotated boxes cx,cy,w,h,angle (angle in radians, from +x towards +y: clockwise on an image), "
               "exact polygon IoU")
      ->group(g);
  const char* io_group = "Input and output";
  tool.format_help("box format of the input, and so of the output: coco, csv, jsonl, mot, voc (default: from the "
                   "extension, the folder or the first line)");
  app.add_flag("--drop-invalid", f.drop_invalid,
               "skip bad records (NaN/inf, missing fields, wrong types) and count them, instead of failing the file")
      ->group(io_group);
  app.add_option("--box-format", f.box_format,
                 "how 4 box numbers are given: xyxy, xywh, cxcywh (default: the format's convention / the column "
                 "names); ENC=c1,c2,c3,c4 names the columns or keys")
      ->type_name("auto|xyxy|xywh|cxcywh[=COLS]")->capture_default_str()->group(io_group);
  app.add_option("--emit", f.emit, "records: the kept records in the input's format, in input order; indices: "
                                   "their 0-based input positions, one per line, by descending score")
      ->capture_default_str()->check(CLI::IsMember({"records", "indices"}))->group(io_group);

  tool.add_example("nms-filter --iou 0.5 --per-class dets.json -o kept.json",
                   "COCO results: per image and class NMS at IoU 0.5 (torchvision batched_nms)");
  tool.add_example("nms-filter --iou 0.7 --group-by level --emit indices proposals.csv -o -",
                   "RPN proposals (CSV x1,y1,x2,y2,score,level): per-level NMS, kept row indices to stdout");
  tool.add_example("cat det.txt | nms-filter --format mot --iou 0.3 - -o - > det_nms.txt",
                   "MOTChallenge detections, per frame, in a pipe");
  tool.add_example("nms-filter --method soft-gaussian --sigma 0.5 --max-dets 100 detection-results/ -o nms/",
                   "a folder of VOC text files: soft-NMS per image, scores rewritten, at most 100 per image");

  Plan plan;
  std::unique_ptr<s3d::detection::NmsEngine> engine;
  Totals totals;

  tool.on_start([&](const s3d::Device& device) {
    f.min_score_given = min_score_opt->count() > 0;
    plan = make_plan(f, tool.settings());
    const auto& s = tool.settings();
    if (s.outputs.empty() && s.output_dir.empty())
      throw s3d::InvalidArgument("no output: give -o PATH|TEMPLATE, -o - (stdout) or --output-dir DIR");
    engine = std::make_unique<s3d::detection::NmsEngine>(device);
  });
  tool.outputs_of([&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) { return planned_outputs(item, ctx, plan); });

  tool.on_summary([&](nlohmann::json& summary) {
    summary["boxes_in"] = totals.boxes_in;
    summary["boxes_kept"] = totals.boxes_kept;
    summary["dropped_invalid"] = totals.dropped_invalid;
    summary["groups"] = totals.groups;
  });

  return tool.run(argc, argv, [&](const s3d::cli::Item& item, s3d::cli::ItemContext& ctx) {
    const std::string& input = item.inputs.front();
    const bool from_stdin = input == "-";
    const std::string path = ctx.readable_path(input);
    s3d::io::BoxReadOptions read = plan.read;
    read.format = input_format(path, plan);
    read.display_name = from_stdin ? "<stdin>" : input;

    // Decide the output before reading so that a wrong output fails fast.
    const bool folder = is_folder(path);
    const std::string out = ctx.output_path(0, default_extension(*read.format, folder, plan.emit_indices));
    if (!plan.emit_indices) {
      if (folder && out == "-")
        throw s3d::InvalidArgument(input + ": a voc folder is written as a folder: give -o DIR or --output-dir "
                                           "(or --emit indices)");
      if (!folder && out != "-") {
        auto ext_format = s3d::io::box_file_format_from_extension(out);
        if (ext_format && *ext_format != *read.format)
          throw s3d::InvalidArgument(out + ": nms-filter writes the input's format (" + s3d::io::to_string(*read.format) +
                                     "), not " + s3d::io::to_string(*ext_format));
      }
    }

    using Clock = std::chrono::steady_clock;
    const auto t_read = Clock::now();
    // Its errors start with read.display_name (`<stdin>` for `-`), which the frame does not prefix again.
    s3d::io::DetectionTable table = s3d::io::read_boxes(path, read);
    for (const auto& reason : table.dropped_reasons) spdlog::info("dropped: {}", reason);
    if (table.dropped_invalid > table.dropped_reasons.size())
      spdlog::info("dropped: ... {} more", table.dropped_invalid - table.dropped_reasons.size());

    // Groups: explicit fields, else per image when the input names images; --per-class adds the class.
    std::vector<std::string> groups = plan.group_fields;
    if (plan.group_default && !table.image_field.empty()) groups.push_back(table.image_field);
    if (f.per_class) {
      if (table.class_field.empty())
        throw s3d::DataError(table.source + ": --per-class: no class field (category_id, class, class_id, label, "
                                            "category); name one with --group-by");
      if (std::none_of(groups.begin(), groups.end(), [&](const std::string& g) { return g == table.class_field; }))
        groups.push_back(table.class_field);
    }
    std::int64_t group_count = 0;
    std::vector<std::int64_t> group_ids = table.group_ids(groups, &group_count);
    std::vector<std::int64_t> image_ids;
    if (!table.image_field.empty()) image_ids = table.group_ids({table.image_field});

    const std::size_t n = table.size();
    const int dim = table.box_dim();
    std::vector<float> boxes(table.boxes.begin(), table.boxes.end());
    std::vector<float> scores(table.scores.begin(), table.scores.end());
    s3d::detection::NmsInput in;
    in.boxes = boxes.data();
    in.scores = scores.data();
    in.group_ids = groups.empty() ? nullptr : group_ids.data();
    in.image_ids = image_ids.empty() ? nullptr : image_ids.data();
    in.count = static_cast<std::int64_t>(n);
    (void)dim;
    const auto t_nms = Clock::now();
    const s3d::detection::NmsResult result = engine->run(in, plan.params);
    const auto t_write = Clock::now();

    if (plan.emit_indices) {
      std::string text;
      text.reserve(result.keep.size() * 7);
      for (std::int64_t row : result.keep) text += std::to_string(table.positions[static_cast<std::size_t>(row)]) + "\n";
      write_text(ctx, out, text);
    } else {
      // Records keep their input order (a filter: only deletions, and rewritten scores for soft-NMS).
      std::vector<std::size_t> order(result.keep.size());
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return result.keep[a] < result.keep[b]; });
      std::vector<std::size_t> rows(order.size());
      // Soft-NMS rewrites the scores it decayed; an unchanged score keeps its original text (NaN = keep).
      std::vector<double> new_scores(order.size(), std::numeric_limits<double>::quiet_NaN());
      bool rescored = false;
      for (std::size_t k = 0; k < order.size(); ++k) {
        rows[k] = static_cast<std::size_t>(result.keep[order[k]]);
        if (result.scores[order[k]] != scores[rows[k]]) {
          new_scores[k] = result.scores[order[k]];
          rescored = true;
        }
      }
      auto files = s3d::io::render_boxes(table, rows, rescored ? &new_scores : nullptr);
      if (folder) {
        for (const auto& file : files) write_text(ctx, (fs::path(out) / file.name).string(), file.content);
      } else {
        write_text(ctx, out, files.front().content);
      }
    }

    const auto t_end = Clock::now();
    auto secs = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
    totals.boxes_in += table.records_in;
    totals.boxes_kept += result.keep.size();
    totals.dropped_invalid += table.dropped_invalid;
    totals.groups += static_cast<std::size_t>(group_count);
    nlohmann::json record;
    record["format"] = s3d::io::to_string(table.format);
    record["boxes_in"] = table.records_in;
    record["boxes_kept"] = result.keep.size();
    record["dropped_invalid"] = table.dropped_invalid;
    record["groups"] = group_count;
    record["group_by"] = groups;
    record["device"] = engine->device().to_string();
    record["output"] = out;
    record["seconds_read"] = secs(t_read, t_nms);
    record["seconds_nms"] = secs(t_nms, t_write);
    record["seconds_write"] = secs(t_write, t_end);
    return record;
  });
}
