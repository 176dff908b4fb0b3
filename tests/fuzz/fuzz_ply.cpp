// PLY reader (and its writer on what it reads), through read_point_cloud.
#include "fuzz_point_cloud.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  s3d::fuzz::read_write_cloud(data, size, "ply");
  return 0;
}
