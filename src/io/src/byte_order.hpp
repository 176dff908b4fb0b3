#pragma once
// Byte order of the host, for the binary formats that state theirs (PFM by the sign of its scale, PLY by
// its `format` line).
#include <cstdint>
#include <cstring>

namespace s3d::io::detail {

inline bool host_is_little_endian() {
  const std::uint16_t one = 1;
  std::uint8_t first_byte = 0;
  std::memcpy(&first_byte, &one, 1);
  return first_byte == 1;
}

}  // namespace s3d::io::detail
