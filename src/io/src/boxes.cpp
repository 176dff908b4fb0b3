// Box files: format names and detection, the table builder shared by the readers, and the writers.
#include "s3d/io/boxes.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <ostream>
#include <unordered_map>

#include "boxes_internal.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------------------

std::string to_string(BoxFileFormat format) {
  switch (format) {
    case BoxFileFormat::kCocoJson:
      return "coco";
    case BoxFileFormat::kCsv:
      return "csv";
    case BoxFileFormat::kJsonLines:
      return "jsonl";
    case BoxFileFormat::kMot:
      return "mot";
    case BoxFileFormat::kVoc:
      return "voc";
  }
  return "?";
}

BoxFileFormat parse_box_file_format(std::string_view name) {
  const std::string n = detail::lower(detail::trim(name));
  if (n == "coco" || n == "json") return BoxFileFormat::kCocoJson;
  if (n == "csv") return BoxFileFormat::kCsv;
  if (n == "jsonl" || n == "ndjson") return BoxFileFormat::kJsonLines;
  if (n == "mot") return BoxFileFormat::kMot;
  if (n == "voc") return BoxFileFormat::kVoc;
  throw InvalidArgument("unknown box format '" + std::string(name) + "' (expected coco, csv, jsonl, mot or voc)");
}

std::string to_string(BoxEncoding encoding) {
  switch (encoding) {
    case BoxEncoding::kAuto:
      return "auto";
    case BoxEncoding::kXyxy:
      return "xyxy";
    case BoxEncoding::kXywh:
      return "xywh";
    case BoxEncoding::kCxcywh:
      return "cxcywh";
  }
  return "?";
}

BoxEncoding parse_box_encoding(std::string_view name) {
  const std::string n = detail::lower(detail::trim(name));
  if (n == "auto") return BoxEncoding::kAuto;
  if (n == "xyxy") return BoxEncoding::kXyxy;
  if (n == "xywh") return BoxEncoding::kXywh;
  if (n == "cxcywh") return BoxEncoding::kCxcywh;
  throw InvalidArgument("unknown box encoding '" + std::string(name) + "' (expected xyxy, xywh or cxcywh)");
}

std::optional<BoxFileFormat> box_file_format_from_extension(const std::string& path) {
  if (path == "-") return std::nullopt;
  const fs::path p(path);
  const std::string ext = detail::lower(p.extension().string());
  const std::string name = detail::lower(p.filename().string());
  if (ext == ".json") return BoxFileFormat::kCocoJson;
  if (ext == ".csv") return BoxFileFormat::kCsv;
  if (ext == ".jsonl" || ext == ".ndjson") return BoxFileFormat::kJsonLines;
  if (ext == ".det" || name == "det.txt" || (name.size() > 8 && name.compare(name.size() - 8, 8, ".det.txt") == 0))
    return BoxFileFormat::kMot;
  return std::nullopt;
}

namespace {

std::string read_file(const std::string& path, const std::string& shown) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw IoError(shown + ": cannot open: " + std::strerror(errno));
  std::string data;
  std::error_code ec;
  if (const auto size = fs::file_size(path, ec); !ec) data.reserve(static_cast<std::size_t>(size));
  char buffer[1 << 16];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f.get())) > 0) data.append(buffer, n);
  if (std::ferror(f.get())) throw IoError(shown + ": read error");
  return data;
}

/// The format a text's first non-blank line suggests (see detect_box_file_format).
std::optional<BoxFileFormat> sniff(std::string_view text) {
  std::size_t i = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i >= text.size()) return std::nullopt;
  if (text[i] == '[') return BoxFileFormat::kCocoJson;
  if (text[i] == '{') return BoxFileFormat::kJsonLines;
  std::size_t end = text.find('\n', i);
  std::string_view line = detail::trim(text.substr(i, end == std::string_view::npos ? text.size() - i : end - i));
  if (line.find(',') != std::string_view::npos) {
    double v;
    std::string_view first = line.substr(0, line.find(','));
    return detail::parse_number(first, &v) ? BoxFileFormat::kMot : BoxFileFormat::kCsv;
  }
  return BoxFileFormat::kVoc;
}

}  // namespace

BoxFileFormat detect_box_file_format(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return BoxFileFormat::kVoc;
  if (auto f = box_file_format_from_extension(path)) return *f;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  auto f = sniff(head);
  if (!f) throw IoError(path + ": empty, cannot tell its box format (give --format)");
  return *f;
}

// ---------------------------------------------------------------------------------------------------------
// Table helpers
// ---------------------------------------------------------------------------------------------------------

const KeyColumn* DetectionTable::key(std::string_view name) const {
  for (const auto& k : keys)
    if (detail::iequals(k.name, name)) return &k;
  return nullptr;
}

std::vector<std::int64_t> DetectionTable::group_ids(const std::vector<std::string>& fields,
                                                    std::int64_t* group_count) const {
  std::vector<std::int64_t> ids(size(), 0);
  std::int64_t count = size() > 0 ? 1 : 0;
  bool first = true;
  for (const auto& f : fields) {
    const KeyColumn* k = key(f);
    if (!k) throw InvalidArgument(source + ": no field '" + f + "' to group by");
    if (first) {
      for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = k->codes[i];
      count = static_cast<std::int64_t>(k->values.size());
      first = false;
      continue;
    }
    // Combine the running id with this column's code into a new dense id (first-seen order).
    std::unordered_map<std::uint64_t, std::int64_t> combined;
    combined.reserve(ids.size());
    const std::uint64_t stride = static_cast<std::uint64_t>(k->values.size()) + 1;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::uint64_t pair = static_cast<std::uint64_t>(ids[i]) * stride + static_cast<std::uint64_t>(k->codes[i]);
      auto it = combined.emplace(pair, static_cast<std::int64_t>(combined.size())).first;
      ids[i] = it->second;
    }
    count = static_cast<std::int64_t>(combined.size());
  }
  if (!first && size() > 0) {
    // Single-column ids are the dictionary codes; renumber so that ids are dense over present rows.
    std::vector<std::int64_t> remap(static_cast<std::size_t>(count), -1);
    std::int64_t next = 0;
    for (auto& id : ids) {
      auto& r = remap[static_cast<std::size_t>(id)];
      if (r < 0) r = next++;
      id = r;
    }
    count = next;
  }
  if (group_count) *group_count = count;
  return ids;
}

// ---------------------------------------------------------------------------------------------------------
// Shared parsing helpers
// ---------------------------------------------------------------------------------------------------------

namespace detail {

std::string_view trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

bool parse_number(std::string_view token, double* value) {
  token = trim(token);
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  if (token.empty()) return false;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, *value);
  if (ec == std::errc::result_out_of_range) {
    // Overflow is a value (inf), underflow rounds to zero: let the finiteness check judge.
    *value = std::strtod(std::string(token).c_str(), nullptr);
    return true;
  }
  return ec == std::errc() && ptr == end;
}

const std::vector<std::string>& image_field_names() {
  static const std::vector<std::string> names{"image_id", "image", "frame", "img_id", "file_name", "filename"};
  return names;
}
const std::vector<std::string>& class_field_names() {
  static const std::vector<std::string> names{"category_id", "class", "class_id", "label", "category", "cls"};
  return names;
}
const std::vector<std::string>& score_field_names() {
  static const std::vector<std::string> names{"score", "conf", "confidence", "scores"};
  return names;
}

std::string find_field(const std::vector<std::string>& available, const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    for (const auto& a : available)
      if (iequals(a, c)) return a;
  return {};
}

namespace {
using NameSets = std::vector<std::vector<std::string>>;
const NameSets& conventional_sets(BoxEncoding e, bool rotated) {
  static const NameSets xyxy{
      {"x1", "y1", "x2", "y2"}, {"xmin", "ymin", "xmax", "ymax"}, {"left", "top", "right", "bottom"}};
  static const NameSets xywh{{"x", "y", "w", "h"},
                             {"x", "y", "width", "height"},
                             {"left", "top", "width", "height"},
                             {"bb_left", "bb_top", "bb_width", "bb_height"}};
  static const NameSets cxcywh{
      {"cx", "cy", "w", "h"}, {"x_center", "y_center", "width", "height"}, {"xc", "yc", "w", "h"}};
  static const NameSets rot{{"cx", "cy", "w", "h", "angle"},
                            {"cx", "cy", "w", "h", "theta"},
                            {"cx", "cy", "w", "h", "a"},
                            {"x_center", "y_center", "width", "height", "angle"},
                            {"x", "y", "w", "h", "angle"}};
  if (rotated) return rot;
  switch (e) {
    case BoxEncoding::kXywh:
      return xywh;
    case BoxEncoding::kCxcywh:
      return cxcywh;
    default:
      return xyxy;
  }
}
}  // namespace

std::vector<std::string> choose_box_fields(const std::vector<std::string>& available, const BoxReadOptions& options,
                                           BoxEncoding* encoding) {
  auto match = [&](const std::vector<std::string>& set) {
    std::vector<std::string> found;
    for (const auto& name : set) {
      std::string f = find_field(available, {name});
      if (f.empty()) return std::vector<std::string>{};
      found.push_back(f);
    }
    return found;
  };
  if (!options.box_fields.empty()) {
    *encoding = options.encoding == BoxEncoding::kAuto ? BoxEncoding::kXyxy : options.encoding;
    if (options.rotated) *encoding = BoxEncoding::kCxcywh;
    return match(options.box_fields);
  }
  if (options.rotated) {
    *encoding = BoxEncoding::kCxcywh;
    for (const auto& set : conventional_sets(BoxEncoding::kCxcywh, true))
      if (auto f = match(set); !f.empty()) return f;
    return {};
  }
  const std::vector<BoxEncoding> order =
      options.encoding == BoxEncoding::kAuto
          ? std::vector<BoxEncoding>{BoxEncoding::kXyxy, BoxEncoding::kXywh, BoxEncoding::kCxcywh}
          : std::vector<BoxEncoding>{options.encoding};
  for (BoxEncoding e : order)
    for (const auto& set : conventional_sets(e, false))
      if (auto f = match(set); !f.empty()) {
        *encoding = e;
        return f;
      }
  return {};
}

std::string forgotten_angle(const std::vector<std::string>& available, const BoxReadOptions& options) {
  if (options.rotated || options.encoding != BoxEncoding::kAuto || !options.box_fields.empty()) return {};
  const std::string angle = find_field(available, {"angle", "theta"});
  if (angle.empty()) return {};
  return "has an angle field '" + angle +
         "': give --rotated for rotated boxes, or --box-format to read them "
         "axis-aligned without the angle";
}

std::string expected_box_fields(const BoxReadOptions& options) {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  if (!options.box_fields.empty()) return join(options.box_fields);
  if (options.rotated) return "cx,cy,w,h,angle";
  switch (options.encoding) {
    case BoxEncoding::kXyxy:
      return "x1,y1,x2,y2 (or xmin,ymin,xmax,ymax / left,top,right,bottom)";
    case BoxEncoding::kXywh:
      return "x,y,w,h (or x,y,width,height / left,top,width,height)";
    case BoxEncoding::kCxcywh:
      return "cx,cy,w,h (or x_center,y_center,width,height)";
    default:
      return "x1,y1,x2,y2 or x,y,w,h or cx,cy,w,h";
  }
}

// ---------------------------------------------------------------------------------------------------------
// TableBuilder
// ---------------------------------------------------------------------------------------------------------

TableBuilder::TableBuilder(DetectionTable& table, const BoxReadOptions& options) : table_(table), options_(options) {}

void TableBuilder::set_key_fields(const std::vector<std::string>& names) {
  key_names_ = names;
  key_maps_.assign(names.size(), {});
  table_.keys.clear();
  for (const auto& n : names) {
    table_.keys.push_back(KeyColumn{n, {}, {}});
    table_.keys.back().codes.reserve(expected_rows_);
  }
}

void TableBuilder::reserve(std::size_t rows) {
  expected_rows_ = rows;
  const std::size_t dim = static_cast<std::size_t>(table_.box_dim());
  table_.given.reserve(rows * dim);
  table_.boxes.reserve(rows * dim);
  table_.scores.reserve(rows);
  table_.positions.reserve(rows);
  table_.original.record.reserve(rows);
  table_.original.score.reserve(rows);
}

void TableBuilder::bad_record(const std::string& where, const std::string& what) {
  std::string message = table_.source + ": " + where + ": " + what;
  if (!options_.drop_invalid) throw DataError(message);
  ++table_.dropped_invalid;
  if (table_.dropped_reasons.size() < 20) table_.dropped_reasons.push_back(std::move(message));
}

std::string TableBuilder::check_finite(const double* given, const std::vector<std::string>& box_names, double score,
                                       std::string_view score_name) const {
  const int dim = table_.box_dim();
  for (int j = 0; j < dim; ++j)
    if (!std::isfinite(given[j])) {
      const std::string name = j < static_cast<int>(box_names.size()) ? box_names[static_cast<std::size_t>(j)]
                                                                      : "bbox[" + std::to_string(j) + "]";
      return name + " is " + (std::isnan(given[j]) ? "NaN" : "infinite");
    }
  if (!std::isfinite(score)) return std::string(score_name) + " is " + (std::isnan(score) ? "NaN" : "infinite");
  // Consumers (NMS) work in float: a finite double beyond float range would turn infinite there.
  constexpr double kFloatMax = static_cast<double>(std::numeric_limits<float>::max());
  for (int j = 0; j < dim; ++j)
    if (std::fabs(given[j]) > kFloatMax) {
      const std::string name = j < static_cast<int>(box_names.size()) ? box_names[static_cast<std::size_t>(j)]
                                                                      : "bbox[" + std::to_string(j) + "]";
      return name + " is out of float range";
    }
  if (std::fabs(score) > kFloatMax) return std::string(score_name) + " is out of float range";
  return {};
}

void TableBuilder::add_row(const double* given, double score, std::size_t position,
                           const std::vector<std::string_view>& keys, OriginalRecords::Span record,
                           OriginalRecords::Span score_span) {
  const int dim = table_.box_dim();
  table_.given.insert(table_.given.end(), given, given + dim);
  if (table_.rotated) {
    table_.boxes.insert(table_.boxes.end(), given, given + dim);
  } else {
    double b[4];
    switch (table_.encoding) {
      case BoxEncoding::kXywh:
        b[0] = given[0], b[1] = given[1], b[2] = given[0] + given[2], b[3] = given[1] + given[3];
        break;
      case BoxEncoding::kCxcywh:
        b[0] = given[0] - given[2] / 2, b[1] = given[1] - given[3] / 2;
        b[2] = given[0] + given[2] / 2, b[3] = given[1] + given[3] / 2;
        break;
      default:
        std::copy(given, given + 4, b);
    }
    table_.boxes.insert(table_.boxes.end(), b, b + 4);
  }
  table_.scores.push_back(score);
  table_.positions.push_back(position);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    key_buffer_.assign(keys[k].data(), keys[k].size());
    auto& map = key_maps_[k];
    auto it = map.find(key_buffer_);
    if (it == map.end()) {
      it = map.emplace(key_buffer_, static_cast<std::int32_t>(map.size())).first;
      table_.keys[k].values.push_back(key_buffer_);
    }
    table_.keys[k].codes.push_back(it->second);
  }
  table_.original.record.push_back(record);
  table_.original.score.push_back(score_span);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------------------

namespace {

void check_options(const BoxReadOptions& options, BoxFileFormat format, const std::string& shown) {
  if (options.rotated && (format == BoxFileFormat::kMot || format == BoxFileFormat::kVoc))
    throw DataError(shown + ": rotated boxes need coco, csv or jsonl input, not " + to_string(format));
  if (options.rotated && !options.box_fields.empty() && options.box_fields.size() != 5)
    throw InvalidArgument("rotated boxes need 5 box field names (cx,cy,w,h,angle)");
  if (!options.rotated && !options.box_fields.empty() && options.box_fields.size() != 4)
    throw InvalidArgument("boxes need 4 box field names");
}

// A file's line ending is that of its first line: written back the same (a Windows tool gets CRLF again).
std::string first_newline(const std::string& text) {
  const std::size_t lf = text.find('\n');
  return lf != std::string::npos && lf > 0 && text[lf - 1] == '\r' ? "\r\n" : "\n";
}

void read_text(DetectionTable& table, const BoxReadOptions& options) {
  table.original.newline = first_newline(table.original.text);
  switch (table.format) {
    case BoxFileFormat::kCsv:
      detail::read_csv(table, options);
      break;
    case BoxFileFormat::kMot:
      detail::read_mot(table, options);
      break;
    case BoxFileFormat::kCocoJson:
      detail::read_coco(table, options);
      break;
    case BoxFileFormat::kJsonLines:
      detail::read_jsonl(table, options);
      break;
    case BoxFileFormat::kVoc: {
      detail::TableBuilder builder(table, options);
      detail::voc_begin(table, builder, options);
      table.original.files.push_back(fs::path(table.source).filename().string());
      std::size_t position = 0;
      const std::string image = fs::path(table.source).stem().string();
      detail::read_voc_part(table, builder, options, 0, table.original.text.size(), 0, image, &position, "");
      break;
    }
  }
}

}  // namespace

DetectionTable read_boxes_from_string(std::string content, BoxFileFormat format, const BoxReadOptions& options) {
  DetectionTable table;
  table.source = options.display_name.empty() ? "<memory>" : options.display_name;
  table.format = format;
  table.rotated = options.rotated;
  check_options(options, format, table.source);
  table.original.text = std::move(content);
  read_text(table, options);
  return table;
}

DetectionTable read_boxes(const std::string& path, const BoxReadOptions& options) {
  const std::string shown = options.display_name.empty() ? path : options.display_name;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  BoxFileFormat format = options.format ? *options.format : detect_box_file_format(path);
  if (is_dir && format != BoxFileFormat::kVoc)
    throw IoError(shown + ": is a folder (only the voc format reads folders)");
  check_options(options, format, shown);
  if (!is_dir) {
    DetectionTable table;
    table.source = shown;
    table.format = format;
    table.rotated = options.rotated;
    table.original.text = read_file(path, shown);
    read_text(table, options);
    return table;
  }
  // A voc folder: every regular *.txt file, in byte order of the names; one image per file.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file()) continue;
    if (detail::lower(entry.path().extension().string()) != ".txt") continue;
    names.push_back(entry.path().filename().string());
  }
  if (ec) throw IoError(shown + ": cannot list folder: " + ec.message());
  std::sort(names.begin(), names.end());
  DetectionTable table;
  table.source = shown;
  table.format = BoxFileFormat::kVoc;
  table.rotated = false;
  table.original.folder = true;
  detail::TableBuilder builder(table, options);
  detail::voc_begin(table, builder, options);
  std::size_t position = 0;
  for (std::size_t f = 0; f < names.size(); ++f) {
    const std::string file_path = (fs::path(path) / names[f]).string();
    std::string bytes = read_file(file_path, (fs::path(shown) / names[f]).string());
    const std::size_t begin = table.original.text.size();
    table.original.text += bytes;
    if (!bytes.empty() && bytes.back() != '\n') table.original.text += '\n';
    table.original.files.push_back(names[f]);
    detail::read_voc_part(table, builder, options, begin, table.original.text.size(), static_cast<std::int32_t>(f),
                          fs::path(names[f]).stem().string(), &position, names[f] + ": ");
  }
  return table;
}

// ---------------------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------------------

std::string format_number(double value) {
  char buffer[64];
  const float f = static_cast<float>(value);
  std::to_chars_result r;
  if (std::isfinite(value) && static_cast<double>(f) == value)
    r = std::to_chars(buffer, buffer + sizeof buffer, f);
  else
    r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, r.ptr);
}

std::vector<BoxOutputFile> render_boxes(const DetectionTable& table, const std::vector<std::size_t>& rows,
                                        const std::vector<double>* new_scores) {
  if (new_scores && new_scores->size() != rows.size())
    throw InvalidArgument("render_boxes: new_scores has " + std::to_string(new_scores->size()) + " values for " +
                          std::to_string(rows.size()) + " rows");
  const auto& orig = table.original;
  const bool json = table.format == BoxFileFormat::kCocoJson || table.format == BoxFileFormat::kJsonLines;
  auto record_text = [&](std::size_t k, std::string& out) {
    const std::size_t row = rows[k];
    if (row >= table.size()) throw InvalidArgument("render_boxes: row " + std::to_string(row) + " out of range");
    const auto span = orig.record[row];
    std::string_view rec(orig.text.data() + span.offset, span.size);
    if (!new_scores || std::isnan((*new_scores)[k])) {
      out.append(rec);
    } else if (json) {
      out += detail::rewrite_json_score(rec, orig.score_field, (*new_scores)[k]);
    } else {
      const auto s = orig.score[row];
      const std::size_t at = s.offset - span.offset;
      out.append(rec.substr(0, at));
      out += format_number((*new_scores)[k]);
      out.append(rec.substr(at + s.size));
    }
  };

  std::vector<BoxOutputFile> files;
  if (table.format == BoxFileFormat::kVoc && orig.folder) {
    files.resize(orig.files.size());
    for (std::size_t f = 0; f < orig.files.size(); ++f) files[f].name = orig.files[f];
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (rows[k] >= table.size()) throw InvalidArgument("render_boxes: row out of range");
      auto& content = files[static_cast<std::size_t>(orig.file_of[rows[k]])].content;
      record_text(k, content);
      content += orig.newline;
    }
    return files;
  }
  files.resize(1);
  std::string& out = files[0].content;
  const std::string& nl = orig.newline;
  out.reserve(rows.size() * 64 + orig.header.size() + 8);
  out += orig.bom;
  if (table.format == BoxFileFormat::kCsv) out += orig.header + nl;
  if (table.format == BoxFileFormat::kCocoJson) {
    out += "[";
    for (std::size_t k = 0; k < rows.size(); ++k) {
      out += k ? "," + nl : nl;
      record_text(k, out);
    }
    out += rows.empty() ? "]" + nl : nl + "]" + nl;
    return files;
  }
  for (std::size_t k = 0; k < rows.size(); ++k) {
    record_text(k, out);
    out += nl;
  }
  return files;
}

void write_boxes(std::ostream& out, const DetectionTable& table, const std::vector<std::size_t>& rows,
                 const std::vector<double>* new_scores) {
  if (table.format == BoxFileFormat::kVoc && table.original.folder)
    throw InvalidArgument(table.source + ": a voc folder is written as a folder, not one stream");
  auto files = render_boxes(table, rows, new_scores);
  out.write(files[0].content.data(), static_cast<std::streamsize>(files[0].content.size()));
}

}  // namespace s3d::io
