#include "plan.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "../common/tool_files.hpp"
#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::nms_filter {
namespace {

using apps::split_list;
using io::BoxFileFormat;

/// The .txt names a voc folder will be written with (those of the input folder).
std::vector<std::string> voc_files(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.is_regular_file() && e.path().extension() == ".txt") names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

Plan make_plan(const Flags& f, const cli::CommonSettings& common) {
  Plan p;
  auto& np = p.params;
  np.iou_threshold = f.iou;
  np.suppress_at_equal = f.iou_ge;
  np.pixel_offset = f.pixel_offset;
  if (f.method == "hard")
    np.method = detection::NmsMethod::kHard;
  else if (f.method == "soft-linear")
    np.method = detection::NmsMethod::kSoftLinear;
  else if (f.method == "soft-gaussian")
    np.method = detection::NmsMethod::kSoftGaussian;
  else
    throw InvalidArgument("--method: expected hard, soft-linear or soft-gaussian, got '" + f.method + "'");
  // The flags by name (NmsParams::validate names its fields): NaN passes CLI11's range check.
  S3D_EXPECTS(f.iou >= 0.f && f.iou <= 1.f, "--iou must be in [0, 1], got " + std::to_string(f.iou));
  S3D_EXPECTS(std::isfinite(f.sigma) && f.sigma > 0.f, "--sigma must be a finite number > 0");
  np.sigma = f.sigma;
  if (f.min_score_given) {
    S3D_EXPECTS(std::isfinite(f.min_score), "--min-score must be a finite number");
    np.min_score = f.min_score;
    // Soft-NMS: a decayed score below --min-score is dropped too (the same floor before and after decay).
    if (np.method != detection::NmsMethod::kHard && f.min_score >= 0.f) np.soft_min_score = f.min_score;
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
    S3D_EXPECTS(p.read.box_fields.size() == want, "--box-format: " + std::to_string(want) +
                                                      " column names expected after '=', got " +
                                                      std::to_string(p.read.box_fields.size()));
  }
  p.read.encoding = io::parse_box_encoding(enc.empty() ? "auto" : enc);
  p.read.rotated = f.rotated;
  p.read.drop_invalid = f.drop_invalid;

  if (!f.group_by.empty()) {
    p.group_default = false;
    if (f.group_by != "none") p.group_fields = split_list(f.group_by);
    S3D_EXPECTS(f.group_by == "none" || !p.group_fields.empty(), "--group-by: give field names or `none`");
    p.read.key_fields = p.group_fields;
  }
  if (!common.format.empty()) p.format = io::parse_box_file_format(common.format);
  // --emit: records or indices (one of them), and/or drawn.
  int kept_count = 0;
  for (const std::string& name : split_list(f.emit)) {
    if (name == "indices")
      p.emit_indices = true;
    else if (name == "drawn")
      p.emit_drawn = true;
    else
      S3D_EXPECTS(name == "records", "--emit: expected records, indices or drawn, got '" + name + "'");
    kept_count += name != "drawn";
  }
  S3D_EXPECTS(kept_count <= 1, "--emit: records or indices, not both");
  S3D_EXPECTS(kept_count == 1 || p.emit_drawn, "--emit: name records, indices or drawn");
  p.emit_kept = kept_count == 1;
  S3D_EXPECTS(!f.draw_suppressed || p.emit_drawn, "--draw-suppressed draws on --emit drawn's pictures: add it");
  S3D_EXPECTS(f.image_dir.empty() || p.emit_drawn, "--image-dir is where --emit drawn finds the images: add it");
  p.draw_suppressed = f.draw_suppressed;
  p.image_dir = f.image_dir;
  if (f.rotated && p.format)
    S3D_EXPECTS(*p.format != BoxFileFormat::kMot && *p.format != BoxFileFormat::kVoc,
                "--rotated needs coco, csv or jsonl input (" + io::to_string(*p.format) + " has no angle)");
  return p;
}

/// The input's format (cheap: extension, folder, or the first line).
BoxFileFormat input_format(const std::string& path, const Plan& plan) {
  if (plan.format) return *plan.format;
  return io::detect_box_file_format(path);
}

std::string default_extension(BoxFileFormat format, bool folder, bool indices) {
  if (indices) return ".keep.txt";
  switch (format) {
    case BoxFileFormat::kCocoJson:
      return ".json";
    case BoxFileFormat::kCsv:
      return ".csv";
    case BoxFileFormat::kJsonLines:
      return ".jsonl";
    case BoxFileFormat::kMot:
      return ".txt";
    case BoxFileFormat::kVoc:
      return folder ? "" : ".txt";
  }
  return "";
}

bool is_folder(const std::string& path) {
  std::error_code ec;
  return path != "-" && fs::is_directory(path, ec);
}

/// The kept records' output paths: one file, or the files of a voc folder.
static std::vector<std::string> kept_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan) {
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

void check_drawn_output(const Plan& plan, const cli::CommonSettings& common) {
  if (!plan.emit_drawn) return;
  const std::size_t slot = plan.emit_kept ? 1 : 0;
  S3D_EXPECTS(common.outputs.size() > slot || !common.output_dir.empty(),
              plan.emit_kept ? "--emit drawn: give its folder a second -o (or --output-dir)"
                             : "--emit drawn: give its folder with -o DIR or --output-dir");
  S3D_EXPECTS(common.outputs.size() <= slot || common.outputs[slot] != "-",
              "--emit drawn writes a folder of pictures: give -o DIR or --output-dir, not -o -");
}

std::string drawn_folder(cli::ItemContext& ctx, const Plan& plan) {
  return plan.emit_drawn ? ctx.output_path(plan.emit_kept ? 1 : 0, "_drawn") : "";
}

std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan) {
  if (!plan.emit_kept) return {};
  return kept_outputs(item, ctx, plan);
}

}  // namespace s3d::nms_filter
