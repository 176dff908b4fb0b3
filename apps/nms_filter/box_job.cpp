#include "box_job.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include "../common/tool_files.hpp"
#include "drawn.hpp"
#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::nms_filter {
namespace {

void write_text(cli::ItemContext& ctx, const std::string& path, const std::string& content) {
  apps::write_file_atomically(ctx, path, content);
}

}  // namespace

/// Decides the output (before reading, so that a wrong output fails fast), then reads and groups the boxes.
BoxJob load_job(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan, bool per_class) {
  BoxJob job;
  job.input = item.inputs.front();
  const bool from_stdin = job.input == "-";
  const std::string path = ctx.readable_path(job.input);
  io::BoxReadOptions read = plan.read;
  read.format = input_format(path, plan);
  read.display_name = from_stdin ? "<stdin>" : job.input;

  job.folder = is_folder(path);
  if (plan.emit_kept) job.out = ctx.output_path(0, default_extension(*read.format, job.folder, plan.emit_indices));
  job.drawn = drawn_folder(ctx, plan);
  if (plan.emit_kept && !plan.emit_indices) {
    if (job.folder && job.out == "-")
      throw InvalidArgument(job.input +
                            ": a voc folder is written as a folder: give -o DIR or --output-dir "
                            "(or --emit indices)");
    if (!job.folder && job.out != "-") {
      auto ext_format = io::box_file_format_from_extension(job.out);
      if (ext_format && *ext_format != *read.format)
        throw InvalidArgument(job.out + ": nms-filter writes the input's format (" + io::to_string(*read.format) +
                              "), not " + io::to_string(*ext_format));
    }
  }

  // Its errors start with read.display_name (`<stdin>` for `-`), which the frame does not prefix again.
  job.table = io::read_boxes(path, read);
  const auto& table = job.table;
  if (plan.emit_drawn && table.image_field.empty())
    throw DataError(table.source +
                    ": --emit drawn: the records name no image (a field image_id, image, frame, img_id, "
                    "file_name or filename)");
  for (const auto& reason : table.dropped_reasons) spdlog::info("dropped: {}", reason);
  if (table.dropped_invalid > table.dropped_reasons.size())
    spdlog::info("dropped: ... {} more", table.dropped_invalid - table.dropped_reasons.size());

  // Groups: explicit fields, else per image when the input names images; --per-class adds the class.
  job.groups = plan.group_fields;
  if (plan.group_default && !table.image_field.empty()) job.groups.push_back(table.image_field);
  if (per_class) {
    if (table.class_field.empty())
      throw DataError(table.source +
                      ": --per-class: no class field (category_id, class, class_id, label, "
                      "category); name one with --group-by");
    if (std::none_of(job.groups.begin(), job.groups.end(),
                     [&](const std::string& g) { return g == table.class_field; }))
      job.groups.push_back(table.class_field);
  }
  job.group_ids = table.group_ids(job.groups, &job.group_count);
  if (!table.image_field.empty()) job.image_ids = table.group_ids({table.image_field});
  job.boxes.assign(table.boxes.begin(), table.boxes.end());
  job.scores.assign(table.scores.begin(), table.scores.end());
  return job;
}

KeptBoxes run_nms(detection::NmsEngine& engine, BoxJob job, const detection::NmsParams& params) {
  detection::NmsInput in;
  in.boxes = job.boxes.data();
  in.scores = job.scores.data();
  in.group_ids = job.groups.empty() ? nullptr : job.group_ids.data();
  in.image_ids = job.image_ids.empty() ? nullptr : job.image_ids.data();
  in.count = static_cast<std::int64_t>(job.table.size());
  KeptBoxes kept;
  kept.result = engine.run(in, params);
  kept.job = std::move(job);
  return kept;
}

/// Writes the kept records (in input order, in the input's format) or their input positions.
void write_kept(cli::ItemContext& ctx, const KeptBoxes& kept, bool emit_indices) {
  const BoxJob& job = kept.job;
  const auto& result = kept.result;
  if (emit_indices) {
    write_text(ctx, job.out, io::render_positions(job.table, result.keep));
    return;
  }
  const auto files = io::render_kept(job.table, result.keep, result.scores);
  if (job.folder) {
    // One output: the folder, staged whole and committed with nothing or everything in it.
    ctx.write_folder_atomically(job.out, [&](const std::string& dir) {
      for (const auto& file : files) {
        const std::string tmp = (fs::path(dir) / file.name).string();
        std::ofstream out(tmp, std::ios::binary);
        const std::string shown = (fs::path(job.out) / file.name).string();
        if (!out) throw io_error_with_reason(shown, "cannot create");
        out.write(file.content.data(), static_cast<std::streamsize>(file.content.size()));
        out.close();
        if (!out) throw io_error_with_reason(shown, "write failed");
      }
    });
  } else {
    write_text(ctx, job.out, files.front().content);
  }
}

nlohmann::json write_job(cli::ItemContext& ctx, const KeptBoxes& kept, const Plan& plan, const Device& device) {
  const auto t_write = Clock::now();
  {
    cli::StageTimer timer(ctx, "write");
    if (plan.emit_kept) write_kept(ctx, kept, plan.emit_indices);
  }
  std::size_t pictures = 0;
  if (plan.emit_drawn) {
    cli::StageTimer timer(ctx, "draw");
    pictures = write_drawn(ctx, kept, plan);
  }
  const BoxJob& job = kept.job;
  nlohmann::json record;
  record["format"] = io::to_string(job.table.format);
  record["boxes_in"] = job.table.records_in;
  record["boxes_kept"] = kept.result.keep.size();
  record["dropped_invalid"] = job.table.dropped_invalid;
  record["groups"] = job.group_count;
  record["group_by"] = job.groups;
  record["device"] = device.to_string();
  if (plan.emit_kept) record["output"] = job.out;
  if (plan.emit_drawn) {
    record["drawn"] = job.drawn;
    record["pictures"] = pictures;
  }
  record["seconds_read"] = job.seconds_read;
  record["seconds_nms"] = kept.seconds_nms;
  record["seconds_write"] = seconds_since(t_write);
  return record;
}

}  // namespace s3d::nms_filter
