#include "s3d/io/npy.hpp"

#include <charconv>
#include <cstring>

#include "byte_order.hpp"
#include "cloud_codec.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

struct NpyHeader {
  char byte_order = '<';
  char kind = 'f';
  std::size_t item_size = 4;
  bool fortran = false;
  std::vector<std::uint64_t> shape;
  std::size_t data_offset = 0;
};

// The text after `'key':` (or "key":) in the header dict, or npos.
std::size_t value_of(const std::string& dict, const std::string& key) {
  for (const char q : {'\'', '"'}) {
    const std::size_t at = dict.find(q + key + q);
    if (at == std::string::npos) continue;
    const std::size_t colon = dict.find(':', at + key.size() + 2);
    if (colon == std::string::npos) return std::string::npos;
    std::size_t v = colon + 1;
    while (v < dict.size() && dict[v] == ' ') ++v;
    return v;
  }
  return std::string::npos;
}

NpyHeader parse_header(const std::string& bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw IoError(path + ": not an .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t length = 0, start = 0;
  if (major == 1) {
    length = static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw IoError(path + ": truncated .npy header");
    for (int k = 3; k >= 0; --k) length = length << 8 | static_cast<unsigned char>(bytes[8 + k]);
    start = 12;
  } else {
    throw IoError(path + ": unsupported .npy version " + std::to_string(major));
  }
  if (length > bytes.size() - start) throw IoError(path + ": truncated .npy header");
  const std::string dict = bytes.substr(start, length);
  NpyHeader h;
  h.data_offset = start + length;
  const std::size_t d = value_of(dict, "descr");
  if (d == std::string::npos || d >= dict.size() || (dict[d] != '\'' && dict[d] != '"'))
    throw DataError(path + ": .npy header without a simple descr (structured dtypes are not supported)");
  const std::size_t end = dict.find(dict[d], d + 1);
  const std::string descr = end == std::string::npos ? "" : dict.substr(d + 1, end - d - 1);
  std::size_t item_size = 0;
  const auto r = descr.size() >= 3 ? std::from_chars(descr.data() + 2, descr.data() + descr.size(), item_size)
                                   : std::from_chars_result{nullptr, std::errc::invalid_argument};
  if (r.ec != std::errc() || r.ptr != descr.data() + descr.size() ||
      std::string("<>|=").find(descr[0]) == std::string::npos)
    throw DataError(path + ": unsupported .npy dtype " + detail::quoted(descr));
  h.byte_order = descr[0] == '=' ? (detail::host_is_little_endian() ? '<' : '>') : descr[0];
  h.kind = descr[1];
  h.item_size = item_size;
  const bool ok =
      ((h.kind == 'i' || h.kind == 'u') && (item_size == 1 || item_size == 2 || item_size == 4 || item_size == 8)) ||
      (h.kind == 'f' && (item_size == 4 || item_size == 8));
  if (!ok)
    throw DataError(path + ": unsupported .npy dtype " + detail::quoted(descr) + " (integers or float32/float64)");
  const std::size_t f = value_of(dict, "fortran_order");
  if (f == std::string::npos) throw IoError(path + ": .npy header without fortran_order");
  h.fortran = dict.compare(f, 4, "True") == 0;
  const std::size_t s = value_of(dict, "shape");
  const std::size_t close = s == std::string::npos ? s : dict.find(')', s);
  if (s == std::string::npos || close == std::string::npos || dict[s] != '(')
    throw IoError(path + ": .npy header without a shape");
  std::string shape = dict.substr(s + 1, close - s - 1);
  for (char& c : shape)
    if (c == ',') c = ' ';
  detail::TextCursor cur{shape.data(), shape.data() + shape.size()};
  std::string_view tok;
  while (cur.next(&tok)) {
    std::uint64_t v = 0;
    const auto rr = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (rr.ec != std::errc() || rr.ptr != tok.data() + tok.size()) throw IoError(path + ": bad .npy shape");
    h.shape.push_back(v);
  }
  return h;
}

ScalarType column_type(const NpyHeader& h) {
  if (h.kind == 'f') return h.item_size == 4 ? ScalarType::kFloat32 : ScalarType::kFloat64;
  const bool s = h.kind == 'i';
  switch (h.item_size) {
    case 1:
      return s ? ScalarType::kInt8 : ScalarType::kUint8;
    case 2:
      return s ? ScalarType::kInt16 : ScalarType::kUint16;
    case 4:
      return s ? ScalarType::kInt32 : ScalarType::kUint32;
    default:
      return ScalarType::kFloat64;  // 64-bit integers have no column type of their own
  }
}

}  // namespace

NpyInt32Array read_npy_int32(const std::string& path) {
  const std::string bytes = detail::read_file_bytes(path);
  const NpyHeader h = parse_header(bytes, path);
  if (h.kind != 'i' || h.item_size != 4)
    throw DataError(path + ": an int32 array ('<i4') is expected, got dtype '" + std::string(1, h.byte_order) + h.kind +
                    std::to_string(h.item_size) + "'");
  if (h.fortran && h.shape.size() > 2)
    throw DataError(path + ": a Fortran-order array of " + std::to_string(h.shape.size()) + " dimensions");
  const std::size_t remaining = (bytes.size() - h.data_offset) / 4;
  std::uint64_t count = 1;
  for (const std::uint64_t d : h.shape) {
    if (d != 0 && count > remaining / d)
      throw IoError(path + ": the shape needs more than the " + std::to_string(bytes.size() - h.data_offset) +
                    " data bytes (truncated?)");
    count *= d;
  }
  NpyInt32Array out;
  out.shape = h.shape;
  out.values.resize(static_cast<std::size_t>(count));
  if (count > 0) std::memcpy(out.values.data(), bytes.data() + h.data_offset, static_cast<std::size_t>(count) * 4);
  if ((h.byte_order == '>') == detail::host_is_little_endian())
    for (std::int32_t& v : out.values) {
      std::uint32_t u = 0;
      std::memcpy(&u, &v, 4);
      u = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
      std::memcpy(&v, &u, 4);
    }
  if (h.fortran && h.shape.size() == 2) {
    const std::size_t rows = static_cast<std::size_t>(h.shape[0]), cols = static_cast<std::size_t>(h.shape[1]);
    std::vector<std::int32_t> c(out.values.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t k = 0; k < cols; ++k) c[r * cols + k] = out.values[k * rows + r];
    out.values.swap(c);
  }
  return out;
}

PointCloud read_npy(const std::string& path) {
  std::string bytes = detail::read_file_bytes(path);
  const NpyHeader h = parse_header(bytes, path);
  if (h.shape.size() != 2 || h.shape[1] < 3)
    throw DataError(path + ": .npy shape must be (N, K) with K >= 3 (x y z ...)");
  const std::uint64_t n = h.shape[0], k = h.shape[1];
  // Each column becomes an attribute: with N = 0 no data bounds K, so a header could ask for billions.
  if (k > detail::kMaxCloudColumns)
    throw DataError(path + ": .npy shape (" + std::to_string(n) + ", " + std::to_string(k) + "): more than " +
                    std::to_string(detail::kMaxCloudColumns) + " columns");
  const std::size_t remaining = bytes.size() - h.data_offset;
  if (n > 0 && (k > remaining / h.item_size || n > remaining / h.item_size / k))
    throw IoError(path + ": shape (" + std::to_string(n) + ", " + std::to_string(k) + ") needs more than the " +
                  std::to_string(remaining) + " data bytes (truncated?)");
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data()) + h.data_offset;
  const bool swap = h.item_size > 1 && (h.byte_order == '>') == detail::host_is_little_endian();
  const ScalarType type = column_type(h);
  std::vector<AttributeColumn> columns;
  for (std::uint64_t c = 0; c < k; ++c) {
    AttributeColumn col;
    col.name = c < 3 ? std::string(1, static_cast<char>('x' + c)) : "col" + std::to_string(c);
    col.type = type;
    col.bytes.resize(n * scalar_size(type));
    std::uint8_t v[8];
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t index = h.fortran ? c * n + i : i * k + c;
      std::memcpy(v, data + index * h.item_size, h.item_size);
      if (swap) detail::reverse_bytes(v, h.item_size);
      if (h.item_size == 8 && h.kind != 'f') {
        double d = 0;
        if (h.kind == 'i') {
          std::int64_t t;
          std::memcpy(&t, v, 8);
          d = static_cast<double>(t);
        } else {
          std::uint64_t t;
          std::memcpy(&t, v, 8);
          d = static_cast<double>(t);
        }
        std::memcpy(v, &d, 8);
      }
      std::memcpy(col.bytes.data() + i * scalar_size(type), v, scalar_size(type));
    }
    columns.push_back(std::move(col));
  }
  PointCloud cloud = detail::cloud_from_columns(std::move(columns), n, path);
  cloud.meta.format = "npy";
  return cloud;
}

std::string npy_header(const char* dtype, const std::vector<std::int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + dtype + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // numpy aligns the data to 64 bytes: magic (6) + version (2) + length (2) + dict, padded, newline.
  while ((10 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

std::string npy_bytes(const void* data, const char* dtype, const std::vector<std::int64_t>& shape) {
  std::string out = npy_header(dtype, shape);
  std::int64_t count = 1;
  for (std::int64_t d : shape) count *= d;
  const std::size_t item = static_cast<std::size_t>(dtype[2] - '0');  // "<i4" -> 4
  if (count > 0) out.append(static_cast<const char*>(data), static_cast<std::size_t>(count) * item);
  return out;
}

void write_npy(const std::string& path, const PointCloud& cloud) {
  cloud.validate();
  detail::require_no_lists(cloud, path, ".npy");
  // x y z first (from the original double columns when they still hold the positions), then the attributes.
  const detail::ColumnsToWrite written = detail::columns_for_writing(cloud, path);
  std::vector<const AttributeColumn*> columns(3, nullptr);
  for (const AttributeColumn* c : written.columns) {
    if (c->name == "x" || c->name == "y" || c->name == "z")
      columns[static_cast<std::size_t>(c->name[0] - 'x')] = c;
    else
      columns.push_back(c);
  }
  std::size_t k = 0;
  // float64 when any value would not survive float32: a double column, or 32-bit integers (beyond 2^24).
  bool wide = false;
  for (const AttributeColumn* c : columns) {
    k += static_cast<std::size_t>(c->components);
    wide = wide || c->type == ScalarType::kFloat64 || c->type == ScalarType::kInt32 || c->type == ScalarType::kUint32;
  }
  const std::size_t n = cloud.size(), item = wide ? 8 : 4;
  std::string out = npy_header(wide ? "<f8" : "<f4", {static_cast<std::int64_t>(n), static_cast<std::int64_t>(k)});
  const std::size_t at = out.size();
  out.resize(at + item * n * k);
  auto* p = reinterpret_cast<std::uint8_t*>(out.data() + at);
  for (std::size_t i = 0; i < n; ++i)
    for (const AttributeColumn* a : columns)
      for (int c = 0; c < a->components; ++c) {
        const double v = a->value(i, static_cast<std::size_t>(c));
        if (wide) {
          std::memcpy(p, &v, 8);
        } else {
          const float f = static_cast<float>(v);
          std::memcpy(p, &f, 4);
        }
        p += item;
      }
  if (!detail::host_is_little_endian())
    for (std::size_t b = at; b < out.size(); b += item)
      detail::reverse_bytes(reinterpret_cast<std::uint8_t*>(&out[b]), item);
  detail::write_file_bytes(path, out);
}

}  // namespace s3d::io
