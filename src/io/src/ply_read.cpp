// PLY reader: header, then each element's items as typed columns.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "byte_order.hpp"
#include "cloud_codec.hpp"
#include "quoted.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/io/ply.hpp"
#include "xyz_rgb_records.hpp"

namespace s3d::io {
namespace {

struct PlyProperty {
  std::string name;
  bool is_list = false;
  ScalarType type = ScalarType::kFloat32;
  ScalarType count_type = ScalarType::kUint8;
};

struct PlyElementHeader {
  std::string name;
  std::uint64_t count = 0;
  std::vector<PlyProperty> properties;
};

struct PlyHeader {
  std::string encoding;
  std::vector<std::string> comments, obj_info;
  std::vector<PlyElementHeader> elements;
  std::size_t data_offset = 0;
};

bool parse_type(const std::string& t, ScalarType* out) {
  static const std::pair<const char*, ScalarType> kNames[] = {
      {"char", ScalarType::kInt8},      {"int8", ScalarType::kInt8},       {"uchar", ScalarType::kUint8},
      {"uint8", ScalarType::kUint8},    {"short", ScalarType::kInt16},     {"int16", ScalarType::kInt16},
      {"ushort", ScalarType::kUint16},  {"uint16", ScalarType::kUint16},   {"int", ScalarType::kInt32},
      {"int32", ScalarType::kInt32},    {"uint", ScalarType::kUint32},     {"uint32", ScalarType::kUint32},
      {"float", ScalarType::kFloat32},  {"float32", ScalarType::kFloat32}, {"double", ScalarType::kFloat64},
      {"float64", ScalarType::kFloat64}};
  for (const auto& [name, type] : kNames)
    if (t == name) {
      *out = type;
      return true;
    }
  return false;
}

// The text after the keyword and one separator, as the file has it.
std::string rest_of(const std::string& line, const std::string& keyword) {
  return line.size() > keyword.size() ? line.substr(keyword.size() + 1) : std::string();
}

PlyHeader parse_header(std::string_view bytes, const std::string& path) {
  PlyHeader h;
  std::size_t pos = 0;
  auto next_line = [&](std::string* line) {
    if (pos >= bytes.size()) return false;
    std::size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) nl = bytes.size();
    *line = std::string(bytes.substr(pos, nl - pos));
    if (!line->empty() && line->back() == '\r') line->pop_back();
    pos = nl + 1;
    return true;
  };
  std::string line;
  std::unordered_set<std::string> property_names;  // of the current element
  if (!next_line(&line) || line != "ply") throw IoError(path + ": not a PLY file (no 'ply' magic line)");
  while (true) {
    if (!next_line(&line)) throw IoError(path + ": PLY header without end_header");
    std::istringstream ls(line);
    std::string kw;
    ls >> kw;
    if (kw.empty()) continue;
    if (kw == "end_header") break;
    if (kw == "comment") {
      h.comments.push_back(rest_of(line, kw));
    } else if (kw == "obj_info") {
      h.obj_info.push_back(rest_of(line, kw));
    } else if (kw == "format") {
      std::string version;
      ls >> h.encoding >> version;
      if (h.encoding != "ascii" && h.encoding != "binary_little_endian" && h.encoding != "binary_big_endian")
        throw IoError(path + ": unknown PLY format " + detail::quoted(h.encoding));
    } else if (kw == "element") {
      PlyElementHeader e;
      std::string count;
      ls >> e.name >> count;
      const auto r = std::from_chars(count.data(), count.data() + count.size(), e.count);
      if (e.name.empty() || count.empty() || r.ec != std::errc() || r.ptr != count.data() + count.size())
        throw IoError(path + ": bad PLY element line " + detail::quoted(line));
      h.elements.push_back(std::move(e));
      property_names.clear();
    } else if (kw == "property") {
      if (h.elements.empty()) throw IoError(path + ": PLY property before any element");
      PlyProperty p;
      std::string t;
      ls >> t;
      if (t == "list") {
        std::string ct, it;
        ls >> ct >> it >> p.name;
        p.is_list = true;
        if (!parse_type(ct, &p.count_type) || is_floating(p.count_type) || !parse_type(it, &p.type))
          throw IoError(path + ": bad PLY list property " + detail::quoted(line));
      } else {
        ls >> p.name;
        if (!parse_type(t, &p.type)) throw IoError(path + ": unknown PLY type " + detail::quoted(t));
      }
      if (p.name.empty()) throw IoError(path + ": PLY property without a name");
      // Properties are kept by name: a second one of the same name could only overwrite or lose the first.
      if (!property_names.insert(p.name).second)
        throw IoError(path + ": PLY element " + detail::quoted(h.elements.back().name) + " has two properties named " +
                      detail::quoted(p.name));
      if (h.elements.back().properties.size() == detail::kMaxCloudColumns)
        throw IoError(path + ": PLY element " + detail::quoted(h.elements.back().name) + " has more than " +
                      std::to_string(detail::kMaxCloudColumns) + " properties");
      h.elements.back().properties.push_back(std::move(p));
    } else {
      throw IoError(path + ": unknown PLY header line " + detail::quoted(line));
    }
  }
  if (h.encoding.empty()) throw IoError(path + ": PLY header without a format line");
  h.data_offset = std::min(pos, bytes.size());  // a file may end right after `end_header`
  return h;
}

bool has_lists(const PlyElementHeader& e) {
  return std::any_of(e.properties.begin(), e.properties.end(), [](const PlyProperty& p) { return p.is_list; });
}

/// The element's empty columns. A column of `spare` with the same name lends its storage (spare keeps the
/// emptied column): with `keep_sizes` (binary fixed-size records, which resize each column to its final
/// size) its values stay, so a column already of the right size is neither reallocated nor zero-filled.
/// Only columns that values are appended to (without `keep_sizes`) get their capacity here: read_fixed_records
/// sizes its own, and float32 x, y, z that go straight into the positions need none (reserving them anyway
/// allocated and freed three blocks of 4 bytes a point on every read).
std::vector<AttributeColumn> make_columns(const PlyElementHeader& e, std::vector<AttributeColumn>* spare,
                                          bool keep_sizes) {
  std::vector<AttributeColumn> columns;
  for (const auto& p : e.properties) {
    AttributeColumn c;
    c.name = p.name;
    c.type = p.type;
    c.is_list = p.is_list;
    c.count_type = p.count_type;
    const auto lent =
        std::find_if(spare->begin(), spare->end(), [&](const AttributeColumn& s) { return s.name == p.name; });
    if (lent != spare->end()) {
      c.bytes = std::move(lent->bytes);
      c.offsets = std::move(lent->offsets);
      lent->name.clear();  // lent once
      c.offsets.clear();
      if (!keep_sizes) c.bytes.clear();
    }
    if (p.is_list) {
      c.offsets.reserve(e.count + 1);
      c.offsets.push_back(0);
    } else if (!keep_sizes) {
      detail::reserve_huge(&c.bytes, e.count * scalar_size(p.type));
    }
    columns.push_back(std::move(c));
  }
  return columns;
}

// Lower bound of an element's size in the file, so a header count can be checked before allocating.
std::uint64_t min_item_size(const PlyElementHeader& e, bool ascii) {
  std::uint64_t s = 0;
  for (const auto& p : e.properties) s += ascii ? 1 : scalar_size(p.is_list ? p.count_type : p.type);
  return s;
}

void check_count(const PlyElementHeader& e, bool ascii, std::size_t remaining, const std::string& path) {
  // Items without properties take no bytes, so nothing bounds their count (2^64 of them, written back,
  // never end): refused.
  if (e.properties.empty() && e.count > 0)
    throw IoError(path + ": PLY element " + detail::quoted(e.name) + " has " + std::to_string(e.count) +
                  " items but no properties");
  const std::uint64_t per_item = min_item_size(e, ascii);
  // ascii: each value takes at least one character and one separator (the last one may lack it).
  const std::uint64_t available = ascii ? (remaining + 1) / 2 : remaining;
  if (per_item > 0 && e.count > available / per_item)
    throw IoError(path + ": header says " + std::to_string(e.count) + " " + detail::quoted(e.name) +
                  " items but only " + std::to_string(remaining) + " bytes of data follow (truncated?)");
}

/// Copies the N-byte values at `in + i * stride` to `out + i * out_stride` (in bytes) for `count` records,
/// reversing each value's bytes when `swap`.
template <std::size_t N>
void gather_values(const std::uint8_t* in, std::size_t stride, std::uint64_t count, std::uint8_t* out,
                   std::size_t out_stride, bool swap) {
  if (!swap || N == 1) {
    for (std::uint64_t i = 0; i < count; ++i) std::memcpy(out + i * out_stride, in + i * stride, N);
    return;
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint8_t v[N];
    std::memcpy(v, in + i * stride, N);
    detail::reverse_bytes(v, N);
    std::memcpy(out + i * out_stride, v, N);
  }
}

/// gather_values into a dense column (out_stride == N) of 1- or 2-byte values without swapping: eight
/// bytes are gathered in a register and stored at once, as one narrow store per value was the slowest part
/// of the read (three uchar colours cost twice the twelve bytes of x y z).
template <std::size_t N>
void gather_narrow_dense(const std::uint8_t* in, std::size_t stride, std::uint64_t count, std::uint8_t* out) {
  constexpr std::uint64_t kPerWord = 8 / N;
  std::uint64_t i = 0;
  for (; i + kPerWord <= count; i += kPerWord) {
    std::uint8_t word[8];
    for (std::uint64_t k = 0; k < kPerWord; ++k) std::memcpy(word + k * N, in + (i + k) * stride, N);
    std::memcpy(out + i * N, word, 8);
  }
  gather_values<N>(in + i * stride, stride, count - i, out + i * N, N, false);
}

void gather_values(std::size_t n, const std::uint8_t* in, std::size_t stride, std::uint64_t count, std::uint8_t* out,
                   std::size_t out_stride, bool swap) {
  const bool dense = out_stride == n && (!swap || n == 1);
  switch (n) {
    case 1:
      return dense ? gather_narrow_dense<1>(in, stride, count, out)
                   : gather_values<1>(in, stride, count, out, out_stride, swap);
    case 2:
      return dense ? gather_narrow_dense<2>(in, stride, count, out)
                   : gather_values<2>(in, stride, count, out, out_stride, swap);
    case 4:
      return gather_values<4>(in, stride, count, out, out_stride, swap);
    case 8:
      return gather_values<8>(in, stride, count, out, out_stride, swap);
    case 12:  // x y z as one 12-byte run, made only when nothing is swapped (read_fixed_records)
      return gather_values<12>(in, stride, count, out, out_stride, false);
    default:
      throw std::logic_error("PLY reader: no copy for " + std::to_string(n) + "-byte values");
  }
}

/// Where one property's values go: `size` bytes at `offset` within each record, to `out + i * out_stride`.
struct CopyTarget {
  std::size_t offset, size;
  std::uint8_t* out;
  std::size_t out_stride;
};

/// split_xyz_rgb_records when the targets are the 15-byte record float x y z, uchar r g b (positions first,
/// then the three colours in record order, nothing swapped): how many records it did, else 0.
std::uint64_t split_common_layout(const std::uint8_t* in, std::uint64_t record, std::uint64_t count, bool swap,
                                  const std::vector<CopyTarget>& targets) {
  const bool fits = !swap && record == 15 && targets.size() == 4 && targets[0].offset == 0 && targets[0].size == 12 &&
                    targets[1].offset == 12 && targets[2].offset == 13 && targets[3].offset == 14 &&
                    std::all_of(targets.begin() + 1, targets.end(),
                                [](const CopyTarget& t) { return t.size == 1 && t.out_stride == 1; });
  if (!fits) return 0;
  return detail::split_xyz_rgb_records(in, count, targets[0].out, targets[1].out, targets[2].out, targets[3].out);
}

/// The columns of float32 x, y, z (the first of each name), or -1s when one is missing.
std::array<int, 3> float_axis_columns(const std::vector<AttributeColumn>& columns) {
  std::array<int, 3> axis_column{-1, -1, -1};
  for (std::size_t k = 0; k < columns.size(); ++k)
    for (int a = 0; a < 3; ++a)
      if (axis_column[a] < 0 && columns[k].type == ScalarType::kFloat32 &&
          columns[k].name == std::string(1, static_cast<char>('x' + a)))
        axis_column[a] = static_cast<int>(k);
  return axis_column;
}

/// Fixed-size records (check_count saw that they fit) scattered into the columns. Column by column over
/// blocks of records that stay in cache: the file is read once, and each copy is a plain load and store
/// (a memcpy call per value was 30x slower than reading the file). With `xyz`, float32 x, y, z go straight
/// into it, interleaved, and their columns stay empty; when they follow each other in the record (the
/// usual layout) and need no swap, each point's 12 bytes are one copy. Returns whether `xyz` was filled.
bool read_fixed_records(const PlyElementHeader& e, bool swap, const std::uint8_t* in, std::uint64_t record,
                        std::vector<AttributeColumn>* columns, std::vector<float>* xyz) {
  if (e.count == 0) {  // nothing to copy (and an empty xyz has no storage to point into)
    for (AttributeColumn& c : *columns) c.bytes.clear();  // lent storage (make_columns) holds old values
    return false;
  }
  const std::array<int, 3> axis_column = float_axis_columns(*columns);
  if (!(axis_column[0] >= 0 && axis_column[1] >= 0 && axis_column[2] >= 0)) xyz = nullptr;
  if (xyz) {
    detail::reserve_huge(xyz, 3 * e.count);
    xyz->resize(3 * e.count);  // no-op when a reused cloud already has this many points
  }
  std::vector<CopyTarget> targets;
  std::size_t offset = 0;
  std::size_t axis_offset[3] = {0, 0, 0};
  for (std::size_t k = 0; k < columns->size(); ++k) {
    AttributeColumn& c = (*columns)[k];
    const std::size_t n = scalar_size(c.type);
    int axis = -1;
    for (int a = 0; xyz && a < 3; ++a)
      if (axis_column[a] == static_cast<int>(k)) axis = a;
    if (axis >= 0) {
      axis_offset[axis] = offset;
    } else {
      detail::reserve_huge(&c.bytes, e.count * n);
      c.bytes.resize(e.count * n);
      targets.push_back({offset, n, c.bytes.data(), n});
    }
    offset += n;
  }
  if (xyz) {
    auto* out = reinterpret_cast<std::uint8_t*>(xyz->data());
    const bool one_run = !swap && axis_offset[1] == axis_offset[0] + 4 && axis_offset[2] == axis_offset[1] + 4;
    if (one_run)  // first, where split_common_layout looks for it
      targets.insert(targets.begin(), {axis_offset[0], 12, out, 12});
    else
      for (int a = 0; a < 3; ++a) targets.push_back({axis_offset[a], 4, out + 4 * a, 12});
  }
  const std::uint64_t done = split_common_layout(in, record, e.count, swap, targets);
  constexpr std::uint64_t kBlock = 2048;  // 2048 records of a few tens of bytes stay in L1/L2
  for (std::uint64_t i0 = done; i0 < e.count; i0 += kBlock) {
    const std::uint64_t count = std::min(kBlock, e.count - i0);
    for (const CopyTarget& t : targets)
      gather_values(t.size, in + i0 * record + t.offset, record, count, t.out + i0 * t.out_stride, t.out_stride, swap);
  }
  return xyz != nullptr;
}

/// `xyz` (may be null): where float32 x, y, z of fixed-size records go directly (see read_fixed_records).
/// Returns whether they went there.
bool read_binary_element(const PlyElementHeader& e, bool swap, std::string_view bytes, std::size_t* pos,
                         std::vector<AttributeColumn>* columns, const std::string& path, std::vector<float>* xyz) {
  auto truncated = [&](std::uint64_t item) {
    return IoError(path + ": truncated PLY data in element " + detail::quoted(e.name) + " at item " +
                   std::to_string(item));
  };
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  if (!has_lists(e)) {
    const std::uint64_t record = min_item_size(e, false);
    if (e.count > (bytes.size() - *pos) / record) throw truncated((bytes.size() - *pos) / record);
    const bool filled_xyz = read_fixed_records(e, swap, data + *pos, record, columns, xyz);
    *pos += e.count * record;
    return filled_xyz;
  }
  for (std::uint64_t i = 0; i < e.count; ++i)
    for (std::size_t k = 0; k < e.properties.size(); ++k) {
      const PlyProperty& p = e.properties[k];
      AttributeColumn& c = (*columns)[k];
      if (!p.is_list) {
        const std::size_t n = scalar_size(p.type);
        if (bytes.size() - *pos < n) throw truncated(i);
        const std::size_t at = c.bytes.size();
        c.bytes.insert(c.bytes.end(), data + *pos, data + *pos + n);
        if (swap) detail::reverse_bytes(c.bytes.data() + at, n);
        *pos += n;
        continue;
      }
      const std::size_t cn = scalar_size(p.count_type);
      if (bytes.size() - *pos < cn) throw truncated(i);
      std::uint8_t count_bytes[8];
      std::memcpy(count_bytes, data + *pos, cn);
      if (swap) detail::reverse_bytes(count_bytes, cn);
      *pos += cn;
      const double length = detail::scalar_to_double(p.count_type, count_bytes);
      if (length < 0) throw IoError(path + ": negative list length in element " + detail::quoted(e.name));
      const std::size_t n = scalar_size(p.type);
      const auto items = static_cast<std::uint64_t>(length);
      if (items > (bytes.size() - *pos) / n) throw truncated(i);
      const std::size_t at = c.bytes.size();
      c.bytes.insert(c.bytes.end(), data + *pos, data + *pos + items * n);
      if (swap)
        for (std::uint64_t j = 0; j < items; ++j) detail::reverse_bytes(c.bytes.data() + at + j * n, n);
      *pos += items * n;
      c.offsets.push_back(c.offsets.back() + items);
    }
  return false;
}

/// The values an item of `e` must have on its line, lists counted as their length's value plus items.
std::string values_expected(const PlyElementHeader& e) {
  const bool lists = has_lists(e);
  return std::to_string(e.properties.size()) + (lists ? " properties (lists counted by their length)" : " properties");
}

void read_ascii_element(const PlyElementHeader& e, detail::TextLines* text, std::vector<AttributeColumn>* columns,
                        const std::string& path) {
  std::string_view tok;
  auto fail = [&](std::uint64_t item, const std::string& what) {
    return IoError(path + ": line " + std::to_string(text->line_number()) + ": item " + std::to_string(item) +
                   " of PLY element " + detail::quoted(e.name) + " " + what);
  };
  auto too_few = [&](std::uint64_t item) { return fail(item, "has fewer values than its " + values_expected(e)); };
  std::uint8_t value[8];
  for (std::uint64_t i = 0; i < e.count; ++i) {
    if (!text->next_line())
      throw IoError(path + ": the data ends at item " + std::to_string(i) + " of PLY element '" + e.name +
                    "', whose header says " + std::to_string(e.count) + " (truncated?)");
    for (std::size_t k = 0; k < e.properties.size(); ++k) {
      const PlyProperty& p = e.properties[k];
      AttributeColumn& c = (*columns)[k];
      std::uint64_t items = 1;
      if (p.is_list) {
        if (!text->next_value(&tok)) throw too_few(i);
        // The length must fit the declared count type, or the file could not be written back as it was.
        if (!detail::parse_scalar(tok, p.count_type, value))
          throw fail(i, "has a bad list length " + detail::quoted(tok));
        const double length = detail::scalar_to_double(p.count_type, value);
        if (length < 0) throw fail(i, "has a bad list length " + detail::quoted(tok));
        items = static_cast<std::uint64_t>(length);
        if (items > text->remaining())
          throw fail(i, "has a list of " + detail::quoted(tok) + " values, more than the data holds (truncated?)");
      }
      const std::size_t n = scalar_size(p.type);
      for (std::uint64_t j = 0; j < items; ++j) {
        if (!text->next_value(&tok)) throw too_few(i);
        if (!detail::parse_scalar(tok, p.type, value))
          throw fail(i, "has a bad value " + detail::quoted(tok) + " for property " + detail::quoted(p.name));
        c.bytes.insert(c.bytes.end(), value, value + n);
      }
      if (p.is_list) c.offsets.push_back(c.offsets.back() + items);
    }
    if (!text->line_done()) throw fail(i, "has more values than its " + values_expected(e));
  }
}

/// read_ply into `cloud`, whose xyz and point attributes lend their storage (make_columns).
void read_ply_reusing(const std::string& path, PointCloud* cloud) {
  const detail::FileBytes file(path);
  const std::string_view bytes = file.view();
  const PlyHeader h = parse_header(bytes, path);
  const bool ascii = h.encoding == "ascii";
  const bool swap = (h.encoding == "binary_big_endian") == detail::host_is_little_endian();
  std::size_t pos = h.data_offset;
  detail::TextLines text(bytes.data(), bytes.data() + pos, bytes.data() + bytes.size());
  std::vector<CloudElement> elements;
  std::vector<AttributeColumn> points;
  std::size_t points_index = 0, point_count = 0;
  bool have_points = false;
  std::vector<float> xyz = std::move(cloud->xyz);  // filled by the binary reader when x, y, z are float32
  std::vector<AttributeColumn> spare = std::move(cloud->attributes), no_spare;
  bool filled_xyz = false;
  for (const PlyElementHeader& e : h.elements) {
    check_count(e, ascii, ascii ? text.remaining() : bytes.size() - pos, path);
    const bool is_points = e.name == "vertex" && !have_points;
    std::vector<AttributeColumn> columns = make_columns(e, is_points ? &spare : &no_spare, !ascii && !has_lists(e));
    if (!e.properties.empty()) {
      if (ascii)
        read_ascii_element(e, &text, &columns, path);
      else
        filled_xyz |= read_binary_element(e, swap, bytes, &pos, &columns, path, is_points ? &xyz : nullptr);
    }
    if (is_points) {
      have_points = true;
      points = std::move(columns);
      points_index = elements.size();
      point_count = static_cast<std::size_t>(e.count);
    } else {
      elements.push_back(CloudElement{e.name, static_cast<std::size_t>(e.count), std::move(columns)});
    }
  }
  if (!have_points) throw DataError(path + ": PLY file without a vertex element");
  // Data beyond what the header counts is refused: a count too small would drop the rest silently.
  if (ascii && text.next_line())
    throw DataError(path + ": line " + std::to_string(text.line_number()) +
                    ": more data than the header's element counts");
  if (!ascii && pos < bytes.size())
    throw DataError(path + ": " + std::to_string(bytes.size() - pos) +
                    " bytes after the last element: more data than the header's element counts");
  if (!filled_xyz) xyz.clear();  // a reused cloud's old positions: cloud_from_columns converts x, y, z
  *cloud = detail::cloud_from_columns(std::move(points), point_count, path, std::move(xyz));
  cloud->elements = std::move(elements);
  cloud->meta.format = "ply";
  cloud->meta.encoding = h.encoding;
  cloud->meta.comments = h.comments;
  cloud->meta.obj_info = h.obj_info;
  cloud->meta.points_element_index = points_index;
}

}  // namespace

PointCloud read_ply(const std::string& path) {
  PointCloud cloud;
  read_ply_reusing(path, &cloud);
  return cloud;
}

void read_ply(const std::string& path, PointCloud* cloud) {
  try {
    read_ply_reusing(path, cloud);
  } catch (...) {
    *cloud = PointCloud{};
    throw;
  }
}

PlyFormat parse_ply_format(const std::string& text) {
  if (text == "ascii") return PlyFormat::kAscii;
  if (text == "binary" || text == "binary_little_endian") return PlyFormat::kBinaryLittleEndian;
  if (text == "binary_big_endian") return PlyFormat::kBinaryBigEndian;
  throw InvalidArgument("unknown PLY format " + detail::quoted(text) + " (expected ascii, binary, binary_big_endian)");
}

}  // namespace s3d::io
