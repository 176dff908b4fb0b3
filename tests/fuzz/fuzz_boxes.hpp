#pragma once
// The box-file targets: the first byte picks reader options (rotated, drop_invalid, the box encoding), the
// rest is the file. What reads is rendered back (all rows, with and without new scores), as nms-filter does.
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "s3d/io/boxes.hpp"

namespace s3d::fuzz {

inline void read_render_boxes(const std::uint8_t* data, std::size_t size, io::BoxFileFormat format) {
  if (size == 0) return;
  const std::uint8_t flags = data[0];
  io::BoxReadOptions options;
  options.format = format;
  options.rotated = (flags & 1) != 0 && format != io::BoxFileFormat::kMot && format != io::BoxFileFormat::kVoc;
  options.drop_invalid = (flags & 2) != 0;
  options.encoding = static_cast<io::BoxEncoding>((flags >> 2) % 4);
  if (flags & 16) options.key_fields = {"image_id"};
  std::string content(reinterpret_cast<const char*>(data + 1), size - 1);
  expect_parsed_or_rejected([&] {
    const io::DetectionTable table = io::read_boxes_from_string(std::move(content), format, options);
    std::vector<std::size_t> rows(table.size());
    std::iota(rows.begin(), rows.end(), std::size_t{0});
    io::render_boxes(table, rows);
    std::vector<double> scores(table.scores);
    for (double& s : scores) s *= 0.5;
    io::render_boxes(table, rows, &scores);
    table.group_ids(table.image_field.empty() ? std::vector<std::string>{}
                                              : std::vector<std::string>{table.image_field});
  });
  // Content detection, as for a `.txt` or stdin input.
  const std::string path = write_temp(data + 1, size - 1, "dets.txt");
  expect_parsed_or_rejected([&] { io::detect_box_file_format(path); });
}

}  // namespace s3d::fuzz
