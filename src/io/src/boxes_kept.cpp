// What a filter kept of a box table, rendered: the kept records in input order with their final scores, their
// input positions, and the boxes to draw on each image.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>

#include "s3d/core/errors.hpp"
#include "s3d/io/boxes.hpp"
#include "s3d/io/overlays.hpp"

namespace s3d::io {
namespace {

std::size_t checked_row(const DetectionTable& table, std::int64_t row, const char* what) {
  S3D_EXPECTS(row >= 0 && static_cast<std::size_t>(row) < table.size(), std::string(what) + ": row " +
                                                                            std::to_string(row) + " out of range (" +
                                                                            std::to_string(table.size()) + " records)");
  return static_cast<std::size_t>(row);
}

std::string score_text(double score) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", score);
  return buf;
}

}  // namespace

std::vector<BoxOutputFile> render_kept(const DetectionTable& table, const std::vector<std::int64_t>& keep,
                                       const std::vector<float>& kept_scores) {
  S3D_EXPECTS(kept_scores.size() == keep.size(), "render_kept: " + std::to_string(kept_scores.size()) + " scores for " +
                                                     std::to_string(keep.size()) + " rows");
  // A filter only deletes (and soft-NMS rewrites scores): records keep their input order.
  std::vector<std::size_t> order(keep.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keep[a] < keep[b]; });
  std::vector<std::size_t> rows(order.size());
  std::vector<double> new_scores(order.size(), std::numeric_limits<double>::quiet_NaN());  // NaN: its own text
  bool rescored = false;
  for (std::size_t k = 0; k < order.size(); ++k) {
    rows[k] = checked_row(table, keep[order[k]], "render_kept");
    if (kept_scores[order[k]] != static_cast<float>(table.scores[rows[k]])) {
      new_scores[k] = kept_scores[order[k]];
      rescored = true;
    }
  }
  return render_boxes(table, rows, rescored ? &new_scores : nullptr);
}

std::string render_positions(const DetectionTable& table, const std::vector<std::int64_t>& rows) {
  std::string text;
  text.reserve(rows.size() * 7);
  for (std::int64_t row : rows)
    text += std::to_string(table.positions[checked_row(table, row, "render_positions")]) + "\n";
  return text;
}

std::vector<std::vector<BoxDrawing>> box_drawings(const DetectionTable& table, const std::vector<std::int64_t>& keep,
                                                  const std::vector<float>& kept_scores, bool suppressed) {
  S3D_EXPECTS(kept_scores.size() == keep.size(), "box_drawings: " + std::to_string(kept_scores.size()) +
                                                     " scores for " + std::to_string(keep.size()) + " rows");
  const KeyColumn* images = table.key(table.image_field);
  const KeyColumn* classes = table.class_field.empty() ? nullptr : table.key(table.class_field);
  if (images == nullptr) throw DataError(table.source + ": --emit drawn: the records name no image");
  std::map<std::size_t, double> kept_score;
  for (std::size_t k = 0; k < keep.size(); ++k)
    kept_score[checked_row(table, keep[k], "box_drawings")] = kept_scores[k];
  std::vector<std::vector<BoxDrawing>> drawings(images->values.size());
  for (int pass = 0; pass < 2; ++pass)  // the suppressed boxes first, the kept ones over them
    for (std::size_t row = 0; row < table.size(); ++row) {
      const auto it = kept_score.find(row);
      const bool is_kept = it != kept_score.end();
      if (is_kept != (pass == 1) || (!is_kept && !suppressed)) continue;
      BoxDrawing d;
      d.rotated = table.rotated;
      std::copy_n(table.boxes.begin() + static_cast<std::ptrdiff_t>(row * table.box_dim()), table.box_dim(),
                  d.box.begin());
      d.colour = classes ? classes->codes[row] : 0;
      d.faint = !is_kept;
      if (is_kept) d.label = (classes ? classes->values[classes->codes[row]] + " " : "") + score_text(it->second);
      drawings[images->codes[row]].push_back(std::move(d));
    }
  return drawings;
}

}  // namespace s3d::io
