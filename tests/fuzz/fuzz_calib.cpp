// Calibration files in every form read_calibration / read_intrinsics detect by content: KITTI calib,
// Middlebury calib.txt, Q.dat, key=value, TUM / 7-Scenes intrinsics; the first byte picks the extension, so
// OpenCV FileStorage (.yml/.xml) is fuzzed too; inputs without `/` are also tried as an inline spec.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "s3d/io/calib.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace s3d;
  if (size == 0) return 0;
  static const char* const kNames[] = {"calib.txt", "calib.yml", "calib.xml", "calib.yaml"};
  const std::string path = fuzz::write_temp(data + 1, size - 1, kNames[data[0] % 4]);
  fuzz::expect_parsed_or_rejected([&] { io::read_calibration(path); });
  fuzz::expect_parsed_or_rejected([&] { io::read_intrinsics(path, 640, 480); });
  const std::string inline_spec(reinterpret_cast<const char*>(data + 1), size - 1);
  // An inline spec is tried as a path first: keep it from naming real files (a `/dev/zero` never ends).
  if (inline_spec.find('/') == std::string::npos && inline_spec.find('\0') == std::string::npos) {
    fuzz::expect_parsed_or_rejected([&] { io::read_calibration(inline_spec); });
    fuzz::expect_parsed_or_rejected([&] { io::read_intrinsics(inline_spec); });
  }
  return 0;
}
