#include "outputs.hpp"

#include <fstream>
#include <sstream>

#include "../common/tool_files.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/point_cloud_io.hpp"

namespace s3d::pc_sample {

std::string npy_bytes(const void* data, const char* dtype, const std::vector<std::int64_t>& shape) {
  std::ostringstream dict;
  dict << "{'descr': '" << dtype << "', 'fortran_order': False, 'shape': (";
  std::int64_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict << shape[i] << (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
    if (i + 1 < shape.size()) dict << " ";
    count *= shape[i];
  }
  dict << "), }";
  std::string header = dict.str();
  // NumPy pads the header with spaces and a newline so that the data starts on a 64-byte boundary.
  const std::size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  // "<i4", "<f4", "<i8": the item size is the dtype's digit; s3d builds for little-endian hosts (as '<' says).
  const std::size_t item = static_cast<std::size_t>(dtype[2] - '0');
  if (count > 0) out.append(static_cast<const char*>(data), static_cast<std::size_t>(count) * item);
  return out;
}

void write_bytes(cli::ItemContext& ctx, const std::string& path, const std::string& content) {
  apps::write_file_atomically(ctx, path, content);
}

void write_indices(cli::ItemContext& ctx, const std::string& path, const std::string& format,
                   const std::vector<std::int32_t>& indices) {
  if (format == "npy") {
    write_bytes(ctx, path, npy_bytes(indices.data(), "<i4", {static_cast<std::int64_t>(indices.size())}));
    return;
  }
  std::string text;
  text.reserve(indices.size() * 8);
  for (std::int32_t i : indices) text += std::to_string(i) + "\n";
  write_bytes(ctx, path, text);
}

void write_cloud(cli::ItemContext& ctx, const std::string& path, const std::string& format, const PointCloud& cloud) {
  io::CloudWriteOptions options;
  // A cloud's meta.format says `kitti_bin`; the flag and extension say `bin`.
  options.format = io::parse_cloud_format(format.empty() ? "ply" : format == "kitti_bin" ? "bin" : format);
  if (options.format == io::CloudFormat::kAuto)
    throw InvalidArgument(path + ": give the output a cloud extension (.ply, .pcd, .bin, .npy) or --format");
  const std::string& enc = cloud.meta.encoding;
  if (cloud.meta.format == "ply" && options.format == io::CloudFormat::kPly && !enc.empty())
    options.ply = io::parse_ply_format(enc);
  if (cloud.meta.format == "pcd" && options.format == io::CloudFormat::kPcd && !enc.empty())
    options.pcd = io::parse_pcd_data(enc);
  ctx.write_atomically(path, [&](const std::string& tmp) { io::write_point_cloud(tmp, cloud, options); });
}

}  // namespace s3d::pc_sample
