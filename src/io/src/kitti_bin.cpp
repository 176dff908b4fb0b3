#include "s3d/io/kitti_bin.hpp"

#include <cstring>

#include "byte_order.hpp"
#include "cloud_codec.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {

PointCloud read_kitti_bin(const std::string& path) {
  std::string bytes = detail::read_file_bytes(path);
  if (bytes.size() % 16 != 0)
    throw DataError(path + ": " + std::to_string(bytes.size()) +
                    " bytes is not a whole number of KITTI points (16 bytes: float32 x y z reflectance)");
  const std::size_t n = bytes.size() / 16;
  auto* data = reinterpret_cast<std::uint8_t*>(bytes.data());
  if (!detail::host_is_little_endian())
    for (std::size_t k = 0; k < bytes.size(); k += 4) detail::reverse_bytes(data + k, 4);
  PointCloud cloud;
  cloud.xyz.resize(3 * n);
  AttributeColumn& intensity = cloud.add_attribute("intensity", ScalarType::kFloat32);
  intensity.bytes.resize(4 * n);
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(&cloud.xyz[3 * i], data + 16 * i, 12);
    std::memcpy(intensity.bytes.data() + 4 * i, data + 16 * i + 12, 4);
  }
  cloud.meta.source = path;
  cloud.meta.format = "kitti_bin";
  cloud.meta.property_order = {"x", "y", "z", "intensity"};
  return cloud;
}

void write_kitti_bin(const std::string& path, const PointCloud& cloud) {
  cloud.validate();
  const AttributeColumn* intensity = cloud.find("intensity");
  if (!intensity) intensity = cloud.find("reflectance");
  if (intensity && (intensity->is_list || intensity->components != 1))
    throw InvalidArgument(path + ": KITTI .bin needs one intensity value per point ('" + intensity->name + "')");
  const std::size_t n = cloud.size();
  std::string out(16 * n, '\0');
  auto* data = reinterpret_cast<std::uint8_t*>(out.data());
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(data + 16 * i, &cloud.xyz[3 * i], 12);
    const float v = !intensity                                ? 0.0f
                    : intensity->type == ScalarType::kFloat32 ? intensity->values<float>()[i]
                                                              : static_cast<float>(intensity->value(i));
    std::memcpy(data + 16 * i + 12, &v, 4);
  }
  if (!detail::host_is_little_endian())
    for (std::size_t k = 0; k < out.size(); k += 4) detail::reverse_bytes(data + k, 4);
  detail::write_file_bytes(path, out);
}

}  // namespace s3d::io
