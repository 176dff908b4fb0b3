// NPY readers: the cloud reader (and its writer on what it reads), through read_point_cloud, and the int32
// array reader (voxel coordinates for pc-sample rulebook) on the same bytes.
#include "fuzz_point_cloud.hpp"
#include "s3d/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  s3d::fuzz::read_write_cloud(data, size, "npy");
  const std::string path = s3d::fuzz::temp_dir() + "/in.npy";  // written by read_write_cloud
  s3d::fuzz::expect_parsed_or_rejected([&] { s3d::io::read_npy_int32(path); });
  return 0;
}
