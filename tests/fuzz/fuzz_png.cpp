// PNG (and whatever else OpenCV's imgcodecs decodes) through s3d::io's wrappers: from memory
// (decode_grey16, the frame's load stage) and from a file (read_grey8, read_rgb8, read_mask).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_support.hpp"
#include "s3d/io/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace s3d;
  fuzz::expect_parsed_or_rejected([&] {
    int bit_depth = 0;
    io::decode_grey16(std::vector<std::uint8_t>(data, data + size), "<fuzz>", &bit_depth);
  });
  const std::string path = fuzz::write_temp(data, size, "in.png");
  fuzz::expect_parsed_or_rejected([&] { io::read_grey8(path); });
  fuzz::expect_parsed_or_rejected([&] { io::read_rgb8(path); });
  fuzz::expect_parsed_or_rejected([&] {
    int width = 0, height = 0;
    io::read_mask(path, &width, &height);
  });
  return 0;
}
