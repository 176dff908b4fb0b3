// PFM: read_pfm (1 and 3 channels, both byte orders) and read_disparity's PFM branch.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "s3d/io/image.hpp"
#include "s3d/io/pfm.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace s3d;
  const std::string path = fuzz::write_temp(data, size, "in.pfm");
  fuzz::expect_parsed_or_rejected([&] { io::read_pfm(path); });
  fuzz::expect_parsed_or_rejected([&] { io::read_disparity(path); });
  return 0;
}
