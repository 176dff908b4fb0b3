// PCD reader and writer (header keywords of v0.5-v0.7; ascii, binary, binary_compressed data).
#include "s3d/io/pcd.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "byte_order.hpp"
#include "cloud_codec.hpp"
#include "lzf.hpp"
#include "quoted.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace {

// LZF's best case: a 3-byte back reference producing 264 bytes.
constexpr std::uint64_t kLzfMaxRatio = 88;

struct PcdField {
  std::string name;
  ScalarType type = ScalarType::kFloat32;
  int count = 1;
};

struct PcdHeader {
  std::string version, data;
  std::vector<PcdField> fields;
  std::vector<std::string> comments;
  std::uint64_t width = 0, height = 1, points = 0;
  bool has_points = false, has_viewpoint = false;
  std::array<double, 7> viewpoint{0, 0, 0, 1, 0, 0, 0};
  std::size_t data_offset = 0;
};

bool type_of(char letter, int size, ScalarType* out) {
  switch (letter) {
    case 'I':
      *out = size == 1 ? ScalarType::kInt8 : size == 2 ? ScalarType::kInt16 : ScalarType::kInt32;
      break;
    case 'U':
      *out = size == 1 ? ScalarType::kUint8 : size == 2 ? ScalarType::kUint16 : ScalarType::kUint32;
      break;
    case 'F':
      *out = size == 4 ? ScalarType::kFloat32 : ScalarType::kFloat64;
      break;
    default:
      return false;
  }
  return static_cast<int>(scalar_size(*out)) == size && (letter != 'F' || size == 4 || size == 8);
}

char letter_of(ScalarType t) {
  return is_floating(t)                                                                   ? 'F'
         : (t == ScalarType::kInt8 || t == ScalarType::kInt16 || t == ScalarType::kInt32) ? 'I'
                                                                                          : 'U';
}

std::uint64_t parse_count(const std::string& text, const std::string& key, const std::string& path) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size())
    throw IoError(path + ": bad PCD " + key + " " + detail::quoted(text));
  return v;
}

PcdHeader parse_header(const std::string& bytes, const std::string& path) {
  PcdHeader h;
  std::vector<std::string> names, sizes, types, counts;
  std::size_t pos = 0;
  bool first = true;
  while (true) {
    if (pos >= bytes.size()) throw IoError(path + ": PCD header without a DATA line");
    std::size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos) nl = bytes.size();
    std::string line = bytes.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (!(first && line.rfind("# .PCD", 0) == 0))
        h.comments.push_back(line.substr(line.size() > 1 && line[1] == ' ' ? 2 : 1));
      first = false;
      continue;
    }
    first = false;
    std::istringstream ls(line);
    std::string key, word;
    ls >> key;
    std::vector<std::string> words;
    while (ls >> word) words.push_back(word);
    auto one = [&]() -> const std::string& {
      if (words.size() != 1) throw IoError(path + ": PCD " + key + " needs one value");
      return words[0];
    };
    if (key == "VERSION")
      h.version = one();
    else if (key == "FIELDS" || key == "COLUMNS") {
      names = words;
      if (names.size() > detail::kMaxCloudColumns)
        throw IoError(path + ": PCD FIELDS names " + std::to_string(names.size()) + " fields, more than " +
                      std::to_string(detail::kMaxCloudColumns));
    } else if (key == "SIZE")
      sizes = words;
    else if (key == "TYPE")
      types = words;
    else if (key == "COUNT")
      counts = words;
    else if (key == "WIDTH")
      h.width = parse_count(one(), key, path);
    else if (key == "HEIGHT")
      h.height = parse_count(one(), key, path);
    else if (key == "POINTS") {
      h.points = parse_count(one(), key, path);
      h.has_points = true;
    } else if (key == "VIEWPOINT") {
      if (words.size() != 7) throw IoError(path + ": PCD VIEWPOINT needs 7 numbers");
      for (int k = 0; k < 7; ++k) {
        std::uint8_t v[8];
        if (!detail::parse_scalar(words[k], ScalarType::kFloat64, v)) throw IoError(path + ": bad PCD VIEWPOINT");
        std::memcpy(&h.viewpoint[k], v, 8);
      }
      h.has_viewpoint = true;
    } else if (key == "DATA") {
      h.data = one();
      break;
    } else {
      throw IoError(path + ": unknown PCD header line " + detail::quoted(line));
    }
  }
  h.data_offset = std::min(pos, bytes.size());  // a file may end right after `DATA ...`
  if (h.data != "ascii" && h.data != "binary" && h.data != "binary_compressed")
    throw IoError(path + ": unknown PCD DATA " + detail::quoted(h.data));
  if (names.empty()) throw IoError(path + ": PCD header without FIELDS");
  if (counts.empty()) counts.assign(names.size(), "1");
  if (sizes.size() != names.size() || types.size() != names.size() || counts.size() != names.size())
    throw IoError(path + ": PCD FIELDS, SIZE, TYPE and COUNT have different lengths");
  for (std::size_t k = 0; k < names.size(); ++k) {
    PcdField f;
    f.name = names[k];
    const std::uint64_t size = parse_count(sizes[k], "SIZE", path);
    const std::uint64_t count = parse_count(counts[k], "COUNT", path);
    if (types[k].size() != 1 || size > 8 || !type_of(types[k][0], static_cast<int>(size), &f.type))
      throw DataError(path + ": unsupported PCD field " + detail::quoted(f.name) + " (TYPE " + types[k] + ", SIZE " +
                      sizes[k] + ")");
    if (count < 1 || count > 1u << 20)
      throw IoError(path + ": bad PCD COUNT " + counts[k] + " for " + detail::quoted(f.name));
    f.count = static_cast<int>(count);
    h.fields.push_back(f);
  }
  if (h.width == 0 && h.has_points) {
    h.width = h.points;
    h.height = 1;
  }
  if (h.height != 0 && h.width > UINT64_MAX / h.height) throw IoError(path + ": PCD WIDTH x HEIGHT overflows");
  if (!h.has_points) h.points = h.width * h.height;
  if (h.points != h.width * h.height)
    throw IoError(path + ": PCD POINTS " + std::to_string(h.points) + " is not WIDTH x HEIGHT " +
                  std::to_string(h.width) + "x" + std::to_string(h.height));
  return h;
}

std::vector<AttributeColumn> make_columns(const PcdHeader& h, std::size_t n) {
  std::vector<AttributeColumn> columns;
  for (const auto& f : h.fields) {
    AttributeColumn c;
    c.name = f.name;
    c.type = f.type;
    c.components = f.count;
    c.bytes.resize(n * f.count * scalar_size(f.type));
    columns.push_back(std::move(c));
  }
  return columns;
}

}  // namespace

PointCloud read_pcd(const std::string& path) {
  const std::string bytes = detail::read_file_bytes(path);
  const PcdHeader h = parse_header(bytes, path);
  std::uint64_t point_bytes = 0;
  for (const auto& f : h.fields) point_bytes += f.count * scalar_size(f.type);
  const std::size_t remaining = bytes.size() - h.data_offset;
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data()) + h.data_offset;
  auto too_many = [&]() {
    return IoError(path + ": header says " + std::to_string(h.points) + " points but only " +
                   std::to_string(remaining) + " bytes of data follow (truncated?)");
  };
  const std::uint64_t n = h.points;
  std::vector<AttributeColumn> columns;
  const bool swap = !detail::host_is_little_endian();  // PCD binary data is little endian in practice
  if (h.data == "ascii") {
    std::uint64_t values_per_point = 0;
    for (const auto& f : h.fields) values_per_point += f.count;
    if (n > 0 && n > (remaining + 1) / 2 / values_per_point) throw too_many();
    columns = make_columns(h, n);
    detail::TextLines text(bytes.data(), bytes.data() + h.data_offset, bytes.data() + bytes.size());
    auto at_line = [&](std::uint64_t i, const std::string& what) {
      return IoError(path + ": line " + std::to_string(text.line_number()) + ": point " + std::to_string(i) + " " +
                     what);
    };
    const std::string expected = std::to_string(values_per_point) + " values of its FIELDS (COUNT counted)";
    std::string_view tok;
    for (std::uint64_t i = 0; i < n; ++i) {
      if (!text.next_line())
        throw IoError(path + ": the data ends at point " + std::to_string(i) + " of the header's " + std::to_string(n) +
                      " (truncated?)");
      for (auto& c : columns) {
        const std::size_t s = scalar_size(c.type);
        for (int k = 0; k < c.components; ++k) {
          if (!text.next_value(&tok)) throw at_line(i, "has fewer values than the " + expected);
          if (!detail::parse_scalar(tok, c.type, c.bytes.data() + (i * c.components + k) * s))
            throw at_line(i, "has a bad value " + detail::quoted(tok) + " for field " + detail::quoted(c.name));
        }
      }
      if (!text.line_done()) throw at_line(i, "has more values than the " + expected);
    }
    // Data beyond the header's POINTS is refused: a count too small would drop the rest silently.
    if (text.next_line())
      throw DataError(path + ": line " + std::to_string(text.line_number()) + ": more data than the header's " +
                      std::to_string(n) + " POINTS");
  } else if (h.data == "binary") {
    if (n > 0 && n > remaining / point_bytes) throw too_many();
    columns = make_columns(h, n);
    const std::uint8_t* p = data;
    for (std::uint64_t i = 0; i < n; ++i)
      for (auto& c : columns) {
        const std::size_t s = c.components * scalar_size(c.type);
        std::memcpy(c.bytes.data() + i * s, p, s);
        p += s;
      }
  } else {
    if (remaining < 8) throw IoError(path + ": truncated PCD binary_compressed header");
    std::uint32_t compressed = 0, uncompressed = 0;
    std::memcpy(&compressed, data, 4);
    std::memcpy(&uncompressed, data + 4, 4);
    if (swap) {
      detail::reverse_bytes(reinterpret_cast<std::uint8_t*>(&compressed), 4);
      detail::reverse_bytes(reinterpret_cast<std::uint8_t*>(&uncompressed), 4);
    }
    if (compressed > remaining - 8)
      throw IoError(path + ": compressed size " + std::to_string(compressed) + " exceeds the file (truncated?)");
    if (n > UINT64_MAX / point_bytes || uncompressed != n * point_bytes)
      throw IoError(path + ": uncompressed size " + std::to_string(uncompressed) + " is not " + std::to_string(n) +
                    " points of " + std::to_string(point_bytes) + " bytes");
    if (uncompressed > compressed * kLzfMaxRatio) throw IoError(path + ": uncompressed size impossible for LZF");
    std::vector<std::uint8_t> soa(uncompressed);
    if (!detail::lzf_decompress(data + 8, compressed, soa.data(), soa.size()))
      throw IoError(path + ": corrupt LZF data");
    columns = make_columns(h, n);
    // Decompressed data is field by field (all x, then all y, ...), not point by point.
    std::size_t offset = 0;
    for (auto& c : columns) {
      std::memcpy(c.bytes.data(), soa.data() + offset, c.bytes.size());
      offset += c.bytes.size();
    }
  }
  if (swap)
    for (auto& c : columns)
      for (std::size_t k = 0; k < c.bytes.size(); k += scalar_size(c.type))
        detail::reverse_bytes(c.bytes.data() + k, scalar_size(c.type));
  PointCloud cloud = detail::cloud_from_columns(std::move(columns), n, path);
  cloud.meta.format = "pcd";
  cloud.meta.encoding = h.data;
  cloud.meta.comments = h.comments;
  cloud.meta.width = static_cast<std::uint32_t>(h.width);
  cloud.meta.height = static_cast<std::uint32_t>(h.height);
  cloud.meta.has_viewpoint = h.has_viewpoint;
  cloud.meta.viewpoint = h.viewpoint;
  cloud.meta.pcd_version = h.version;
  return cloud;
}

void write_pcd(const std::string& path, const PointCloud& cloud, PcdData data) {
  cloud.validate();
  detail::require_no_lists(cloud, path, "PCD");
  const detail::ColumnsToWrite w = detail::columns_for_writing(cloud, path);
  const std::size_t n = cloud.size();
  const bool organised = cloud.meta.width > 0 && std::uint64_t{cloud.meta.width} * cloud.meta.height == n;
  std::string out = "# .PCD v0.7 - Point Cloud Data file format\n";
  for (const auto& c : cloud.meta.comments) out += "# " + c + "\n";
  std::string fields = "FIELDS", sizes = "SIZE", types = "TYPE", counts = "COUNT";
  for (const AttributeColumn* c : w.columns) {
    fields += " " + c->name;
    sizes += " " + std::to_string(scalar_size(c->type));
    types += std::string(" ") + letter_of(c->type);
    counts += " " + std::to_string(c->components);
  }
  out += "VERSION 0.7\n" + fields + "\n" + sizes + "\n" + types + "\n" + counts + "\n";
  out += "WIDTH " + std::to_string(organised ? cloud.meta.width : n) + "\n";
  out += "HEIGHT " + std::to_string(organised ? cloud.meta.height : 1) + "\n";
  out += "VIEWPOINT";
  for (double v : cloud.meta.viewpoint) {
    out.push_back(' ');
    detail::append_scalar_text(ScalarType::kFloat64, reinterpret_cast<const std::uint8_t*>(&v), &out);
  }
  out += "\nPOINTS " + std::to_string(n) + "\nDATA " + to_string(data) + "\n";
  const bool swap = !detail::host_is_little_endian();
  auto append_value = [&](std::string* dst, const AttributeColumn& c, std::size_t index) {
    const std::size_t s = scalar_size(c.type);
    std::uint8_t b[8];
    std::memcpy(b, c.bytes.data() + index * s, s);
    if (swap) detail::reverse_bytes(b, s);
    dst->append(reinterpret_cast<const char*>(b), s);
  };
  if (data == PcdData::kAscii) {
    for (std::size_t i = 0; i < n; ++i) {
      bool first = true;
      for (const AttributeColumn* c : w.columns)
        for (int k = 0; k < c->components; ++k) {
          if (!first) out.push_back(' ');
          first = false;
          detail::append_scalar_text(c->type, c->bytes.data() + (i * c->components + k) * scalar_size(c->type), &out);
        }
      out.push_back('\n');
    }
  } else if (data == PcdData::kBinary) {
    for (std::size_t i = 0; i < n; ++i)
      for (const AttributeColumn* c : w.columns)
        for (int k = 0; k < c->components; ++k) append_value(&out, *c, i * c->components + k);
  } else {
    std::string soa;
    for (const AttributeColumn* c : w.columns)
      for (std::size_t v = 0; v < n * c->components; ++v) append_value(&soa, *c, v);
    if (soa.size() > UINT32_MAX) throw InvalidArgument(path + ": too large for PCD binary_compressed (4 GiB)");
    const std::string packed = detail::lzf_compress(reinterpret_cast<const std::uint8_t*>(soa.data()), soa.size());
    std::uint32_t sizes_le[2] = {static_cast<std::uint32_t>(packed.size()), static_cast<std::uint32_t>(soa.size())};
    if (swap)
      for (auto& s : sizes_le) detail::reverse_bytes(reinterpret_cast<std::uint8_t*>(&s), 4);
    out.append(reinterpret_cast<const char*>(sizes_le), 8);
    out += packed;
  }
  detail::write_file_bytes(path, out);
}

PcdData parse_pcd_data(const std::string& text) {
  if (text == "ascii") return PcdData::kAscii;
  if (text == "binary") return PcdData::kBinary;
  if (text == "binary_compressed") return PcdData::kBinaryCompressed;
  throw InvalidArgument("unknown PCD DATA " + detail::quoted(text) + " (expected ascii, binary, binary_compressed)");
}

const char* to_string(PcdData data) {
  switch (data) {
    case PcdData::kAscii:
      return "ascii";
    case PcdData::kBinary:
      return "binary";
    case PcdData::kBinaryCompressed:
      return "binary_compressed";
  }
  return "?";
}

}  // namespace s3d::io
