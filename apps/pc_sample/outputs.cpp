#include "outputs.hpp"

#include <fstream>
#include <sstream>

#include "../common/tool_files.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/index_list.hpp"
#include "s3d/io/npy.hpp"
#include "s3d/io/point_cloud_io.hpp"

namespace s3d::pc_sample {

void write_bytes(cli::ItemContext& ctx, const std::string& path, const std::string& content) {
  apps::write_file_atomically(ctx, path, content);
}

void write_indices(cli::ItemContext& ctx, const std::string& path, const std::string& format,
                   const std::vector<std::int32_t>& indices) {
  if (format == "npy") {
    write_bytes(ctx, path, io::npy_bytes(indices.data(), "<i4", {static_cast<std::int64_t>(indices.size())}));
    return;
  }
  write_bytes(ctx, path, io::index_list_text(indices));
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
