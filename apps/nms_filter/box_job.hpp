#pragma once
// nms-filter's stages: a box file read and grouped (load), NMS (the handler), the kept boxes written
// (write), and the batch totals of the summary.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "plan.hpp"
#include "s3d/cli/tool.hpp"
#include "s3d/detection/nms.hpp"
#include "s3d/io/boxes.hpp"

namespace s3d::nms_filter {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// One box file, read and grouped (the load stage's result).
struct BoxJob {
  io::DetectionTable table;
  std::vector<std::string> groups;  ///< the fields the groups are made of
  std::vector<std::int64_t> group_ids, image_ids;
  std::int64_t group_count = 0;
  std::vector<float> boxes, scores;
  std::string input, out;  ///< as given; the kept records' path (`-` = stdout; "" with --emit drawn alone)
  std::string drawn;       ///< --emit drawn: the folder of pictures ("" = none)
  bool folder = false;     ///< a voc folder, written as a folder
  double seconds_read = 0.0;
};

/// The handler's result: the job and what NMS kept.
struct KeptBoxes {
  BoxJob job;
  detection::NmsResult result;
  double seconds_nms = 0.0;
};

/// Decides the output (before reading, so that a wrong output fails fast), then reads and groups the boxes.
/// @throws InvalidArgument (a wrong output), IoError / DataError naming the file.
BoxJob load_job(const cli::Item& item, cli::ItemContext& ctx, const Plan& plan, bool per_class);
/// NMS of the job's boxes on `engine`'s device.
KeptBoxes run_nms(detection::NmsEngine& engine, BoxJob job, const detection::NmsParams& params);
/// Writes the kept records (in input order, in the input's format) or their input positions, atomically.
void write_kept(cli::ItemContext& ctx, const KeptBoxes& kept, bool emit_indices);
/// The write stage: the kept records or indices (--emit records|indices), the pictures (--emit drawn), and the
/// record's fields.
nlohmann::json write_job(cli::ItemContext& ctx, const KeptBoxes& kept, const Plan& plan, const Device& device);

}  // namespace s3d::nms_filter
