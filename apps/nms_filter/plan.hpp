#pragma once
// nms-filter's flags turned into library settings (checked once, before any input is read), and the
// output paths an input file will get.
#include <optional>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/detection/nms.hpp"
#include "s3d/io/boxes.hpp"

namespace s3d::nms_filter {

/// The tool's own flags, as given.
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
  bool draw_suppressed = false;
  std::string image_dir;
};

/// Flags turned into library settings.
struct Plan {
  detection::NmsParams params;
  io::BoxReadOptions read;
  std::optional<io::BoxFileFormat> format;  // --format
  bool group_default = true;                // no --group-by: per image when there is an image field
  std::vector<std::string> group_fields;
  bool emit_indices = false;
  bool emit_kept = true;  ///< records or indices are written (false: --emit drawn alone)
  bool emit_drawn = false;
  bool draw_suppressed = false;
  std::string image_dir;  ///< --image-dir ("" = the input's folder)
};

/// @throws InvalidArgument naming the flag that is wrong.
Plan make_plan(const Flags& f, const cli::CommonSettings& common);
/// The input's format (cheap: --format, the extension, the folder or the first line).
io::BoxFileFormat input_format(const std::string& path, const Plan& plan);
/// Extension of an output named by --output-dir alone.
std::string default_extension(io::BoxFileFormat format, bool folder, bool indices);
bool is_folder(const std::string& path);
/// The kept records' output paths of one item: one file, or the files of a voc folder (none with --emit
/// drawn alone: a folder of pictures is replaced whole, never a finished output to skip).
std::vector<std::string> planned_outputs(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan);
/// @throws InvalidArgument when --emit drawn has no folder to write to (exit 2 before any item runs).
void check_drawn_output(const Plan& plan, const cli::CommonSettings& common);
/// The folder --emit drawn writes its pictures to ("" = not asked for): the output slot after the kept
/// records' (the only one with --emit drawn alone); with --output-dir alone `DIR/NAME_drawn`.
std::string drawn_folder(cli::ItemContext& ctx, const Plan& plan);

}  // namespace s3d::nms_filter
