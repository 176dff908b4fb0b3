// Box files, jsonl: read_boxes_from_string, render_boxes, detect_box_file_format.
#include "fuzz_boxes.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  s3d::fuzz::read_render_boxes(data, size, s3d::io::BoxFileFormat::kJsonLines);
  return 0;
}
