// KITTI 16-bit disparity PNG (d = v / 256) and the 8-bit Middlebury branch (given scale) of read_disparity.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "s3d/io/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace s3d;
  const std::string path = fuzz::write_temp(data, size, "disp.png");
  fuzz::expect_parsed_or_rejected([&] { io::read_disparity(path); });
  fuzz::expect_parsed_or_rejected([&] { io::read_disparity(path, 4.0); });
  return 0;
}
