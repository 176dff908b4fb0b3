// PLY writer: the cloud's layout (element order, property order, types) in any of the three encodings.
#include <algorithm>
#include <cstring>
#include <limits>

#include "byte_order.hpp"
#include "cloud_codec.hpp"
#include "quoted.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/ply.hpp"

namespace s3d::io {
namespace {

struct Encoder {
  PlyFormat format;
  bool swap;
  std::string* out;

  void value(ScalarType type, const std::uint8_t* p, bool first) {
    if (format == PlyFormat::kAscii) {
      if (!first) out->push_back(' ');
      detail::append_scalar_text(type, p, out);
      return;
    }
    const std::size_t n = scalar_size(type);
    std::uint8_t b[8];
    std::memcpy(b, p, n);
    if (swap) detail::reverse_bytes(b, n);
    out->append(reinterpret_cast<const char*>(b), n);
  }

  // Item `item` of column `c`: its `components` values, or its list length then its values.
  void item(const AttributeColumn& c, std::size_t item, bool* first, const std::string& path) {
    const std::size_t n = scalar_size(c.type);
    const std::uint8_t* base = c.bytes.data();
    if (c.is_list) {
      const std::uint64_t length = c.offsets[item + 1] - c.offsets[item];
      std::uint8_t count[8];
      AttributeColumn holder;
      holder.type = c.count_type;
      holder.bytes.resize(scalar_size(c.count_type));
      holder.set_value(0, 0, static_cast<double>(length));
      if (static_cast<std::uint64_t>(holder.value(0)) != length)
        throw InvalidArgument(path + ": list " + detail::quoted(c.name) + " has " + std::to_string(length) +
                              " values, more than its length type " + scalar_name(c.count_type) + " holds");
      std::memcpy(count, holder.bytes.data(), holder.bytes.size());
      value(c.count_type, count, *first);
      *first = false;
      for (std::uint64_t j = c.offsets[item]; j < c.offsets[item + 1]; ++j) value(c.type, base + j * n, false);
      return;
    }
    for (int k = 0; k < c.components; ++k) {
      value(c.type, base + (item * c.components + k) * n, *first);
      *first = false;
    }
  }
};

// PLY 1.0's own names: every reader knows them, not all know int8 ... float64.
const char* ply_name(ScalarType t) {
  switch (t) {
    case ScalarType::kInt8:
      return "char";
    case ScalarType::kUint8:
      return "uchar";
    case ScalarType::kInt16:
      return "short";
    case ScalarType::kUint16:
      return "ushort";
    case ScalarType::kInt32:
      return "int";
    case ScalarType::kUint32:
      return "uint";
    case ScalarType::kFloat32:
      return "float";
    case ScalarType::kFloat64:
      return "double";
  }
  return "?";
}

void declare(const AttributeColumn& c, std::string* header) {
  if (c.is_list) {
    *header += std::string("property list ") + ply_name(c.count_type) + " " + ply_name(c.type) + " " + c.name + "\n";
    return;
  }
  if (c.components == 1) {
    *header += std::string("property ") + ply_name(c.type) + " " + c.name + "\n";
    return;
  }
  for (int k = 0; k < c.components; ++k)
    *header += std::string("property ") + ply_name(c.type) + " " + c.name + "_" + std::to_string(k) + "\n";
}

void write_items(Encoder* enc, const std::vector<const AttributeColumn*>& columns, std::size_t count,
                 const std::string& path) {
  const bool fixed_size =
      std::none_of(columns.begin(), columns.end(), [](const AttributeColumn* c) { return c->is_list; });
  if (enc->format != PlyFormat::kAscii && fixed_size) {
    // Records of one size: gather the columns into place in one buffer.
    std::size_t record = 0;
    for (const AttributeColumn* c : columns) record += c->components * scalar_size(c->type);
    const std::size_t at = enc->out->size();
    enc->out->resize(at + count * record);
    auto* out = reinterpret_cast<std::uint8_t*>(&(*enc->out)[at]);
    for (std::size_t i = 0; i < count; ++i)
      for (const AttributeColumn* c : columns) {
        const std::size_t n = scalar_size(c->type);
        for (int k = 0; k < c->components; ++k, out += n) {
          std::memcpy(out, c->bytes.data() + (i * c->components + k) * n, n);
          if (enc->swap) detail::reverse_bytes(out, n);
        }
      }
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    bool first = true;
    for (const AttributeColumn* c : columns) enc->item(*c, i, &first, path);
    if (enc->format == PlyFormat::kAscii) enc->out->push_back('\n');
  }
}

}  // namespace

void write_ply(const std::string& path, const PointCloud& cloud, PlyFormat format) {
  cloud.validate();
  const detail::ColumnsToWrite points = detail::columns_for_writing(cloud, path);
  const std::size_t points_at = std::min(cloud.meta.points_element_index, cloud.elements.size());
  std::string out = "ply\nformat ";
  out += format == PlyFormat::kAscii             ? "ascii"
         : format == PlyFormat::kBinaryBigEndian ? "binary_big_endian"
                                                 : "binary_little_endian";
  out += " 1.0\n";
  for (const auto& c : cloud.meta.comments) out += "comment " + c + "\n";
  for (const auto& o : cloud.meta.obj_info) out += "obj_info " + o + "\n";
  auto declare_element = [&](const std::string& name, std::size_t count, const auto& columns) {
    out += "element " + name + " " + std::to_string(count) + "\n";
    for (const AttributeColumn* c : columns) declare(*c, &out);
  };
  std::vector<std::vector<const AttributeColumn*>> element_columns;
  for (const auto& e : cloud.elements) {
    std::vector<const AttributeColumn*> cols;
    for (const auto& p : e.properties) cols.push_back(&p);
    element_columns.push_back(std::move(cols));
  }
  for (std::size_t k = 0; k <= cloud.elements.size(); ++k) {
    if (k == points_at) declare_element("vertex", cloud.size(), points.columns);
    if (k < cloud.elements.size()) declare_element(cloud.elements[k].name, cloud.elements[k].count, element_columns[k]);
  }
  out += "end_header\n";
  const bool big = format == PlyFormat::kBinaryBigEndian;
  Encoder enc{format, big == detail::host_is_little_endian(), &out};
  for (std::size_t k = 0; k <= cloud.elements.size(); ++k) {
    if (k == points_at) write_items(&enc, points.columns, cloud.size(), path);
    if (k < cloud.elements.size()) write_items(&enc, element_columns[k], cloud.elements[k].count, path);
  }
  detail::write_file_bytes(path, out);
}

}  // namespace s3d::io
