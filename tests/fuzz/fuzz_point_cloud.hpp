#pragma once
// The point-cloud targets: read the input as FORMAT; what reads is written back in the same format and read
// again (a writer must handle whatever a reader accepts).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "s3d/io/point_cloud_io.hpp"

namespace s3d::fuzz {

inline void read_write_cloud(const std::uint8_t* data, std::size_t size, const std::string& ext) {
  const std::string path = write_temp(data, size, "in." + ext);
  expect_parsed_or_rejected([&] {
    const PointCloud cloud = io::read_point_cloud(path);
    const std::string back = temp_dir() + "/back." + ext;
    try {
      io::write_point_cloud(back, cloud);
    } catch (const s3d::InvalidArgument&) {
      return;  // content the format cannot hold (lists in PCD, ...): documented
    }
    io::read_point_cloud(back);
  });
}

}  // namespace s3d::fuzz
