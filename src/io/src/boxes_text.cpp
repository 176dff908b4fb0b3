// Line-based box formats: CSV with a header, MOTChallenge det.txt, VOC-style per-image text files.
// Parsing works in place on the file's bytes (std::from_chars, no per-line allocation) so that large
// files (hundreds of thousands of records) read in a few milliseconds.
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "boxes_internal.hpp"
#include "quoted.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io::detail {
namespace {

using Span = OriginalRecords::Span;

/// Iterates the lines of text[begin, end): `fn(line_number, line_begin, line_view)` for each line (the
/// view excludes '\n' and a trailing '\r'); line numbers start at `first_line`.
template <class Fn>
void for_each_line(const std::string& text, std::size_t begin, std::size_t end, Fn&& fn) {
  std::size_t line_no = 1;
  std::size_t pos = begin;
  while (pos < end) {
    const void* nl = std::memchr(text.data() + pos, '\n', end - pos);
    std::size_t stop = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : end;
    std::size_t len = stop - pos;
    if (len > 0 && text[pos + len - 1] == '\r') --len;
    fn(line_no, pos, std::string_view(text.data() + pos, len));
    ++line_no;
    pos = stop + 1;
  }
}

bool blank(std::string_view line) { return trim(line).empty(); }

std::size_t count_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
}

/// A field of a split line: its value span relative to the line (quotes and spaces excluded).
struct Field {
  std::size_t offset;
  std::size_t size;
};

/// Splits a CSV line on commas; a field may be quoted ("a,b"); doubled quotes inside stay as they are.
void split_csv(std::string_view line, std::vector<Field>& out) {
  out.clear();
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (true) {
    std::size_t b = i;
    while (b < n && (line[b] == ' ' || line[b] == '\t')) ++b;
    if (b < n && line[b] == '"') {
      std::size_t e = b + 1;
      while (e < n) {
        if (line[e] == '"') {
          if (e + 1 < n && line[e + 1] == '"') {
            e += 2;
            continue;
          }
          break;
        }
        ++e;
      }
      out.push_back({b + 1, (e < n ? e : n) - (b + 1)});
      i = e < n ? e + 1 : n;
      while (i < n && line[i] != ',') ++i;
    } else {
      std::size_t e = b;
      while (e < n && line[e] != ',') ++e;
      std::size_t t = e;
      while (t > b && (line[t - 1] == ' ' || line[t - 1] == '\t')) --t;
      out.push_back({b, t - b});
      i = e;
    }
    if (i >= n) break;
    ++i;  // the comma
  }
}

/// Splits on runs of spaces/tabs.
void split_ws(std::string_view line, std::vector<Field>& out) {
  out.clear();
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= n) break;
    std::size_t b = i;
    while (i < n && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back({b, i - b});
  }
}

/// Parses field `f` of `line` named `name` into `*v`; returns "" or a message.
std::string number_field(std::string_view line, const Field& f, std::string_view name, double* v) {
  std::string_view tok = line.substr(f.offset, f.size);
  if (trim(tok).empty()) return std::string(name) + " is missing";
  if (!parse_number(tok, v)) return std::string(name) + " is not a number: " + quoted(tok);
  return {};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

/// Index of `name` (without case) in `names`, or -1.
int index_of(const std::vector<std::string>& names, std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (iequals(names[i], name)) return static_cast<int>(i);
  return -1;
}

/// The key columns: requested fields, then the image and class fields (if found and not already asked).
std::vector<std::string> key_list(const BoxReadOptions& options, const std::string& image, const std::string& cls) {
  std::vector<std::string> keys;
  auto add = [&](const std::string& k) {
    if (k.empty() || index_of(keys, k) >= 0) return;
    keys.push_back(k);
  };
  for (const auto& k : options.key_fields) add(k);
  add(image);
  add(cls);
  return keys;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------------------

void read_csv(DetectionTable& table, const BoxReadOptions& options) {
  const std::string& text = table.original.text;
  std::size_t start = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) {
    start = 3;
    table.original.bom = text.substr(0, 3);
  }
  TableBuilder builder(table, options);
  builder.reserve(count_lines(text));

  std::vector<std::string> columns;
  std::vector<int> box_col, key_col;
  std::vector<std::string> box_names;
  int score_col = -1;
  bool have_header = false;
  std::size_t position = 0;
  std::vector<Field> fields;
  std::vector<std::string_view> keys;
  double given[5];

  for_each_line(text, start, text.size(), [&](std::size_t line_no, std::size_t line_begin, std::string_view line) {
    if (blank(line)) return;
    split_csv(line, fields);
    if (!have_header) {
      have_header = true;
      table.original.header = std::string(line);
      const std::string where = table.source + ": line " + std::to_string(line_no) + " (header): ";
      for (const auto& f : fields) {
        std::string_view name = line.substr(f.offset, f.size);
        // Columns are found by name without case: a second one of the same name would be ambiguous.
        if (const int first = index_of(columns, std::string(name)); first >= 0 && !name.empty())
          throw DataError(where + "column " + quoted(std::string(name)) + " appears twice (columns " +
                          std::to_string(first + 1) + " and " + std::to_string(columns.size() + 1) + ")");
        columns.emplace_back(name);
      }
      BoxEncoding encoding = BoxEncoding::kXyxy;
      box_names = choose_box_fields(columns, options, &encoding);
      if (box_names.empty())
        throw DataError(where + "no box columns " + expected_box_fields(options) + " (columns: " + join(columns) + ")");
      if (std::string angle = forgotten_angle(columns, options); !angle.empty()) throw DataError(where + angle);
      table.encoding = encoding;
      for (const auto& b : box_names) box_col.push_back(index_of(columns, b));
      std::string score_name = options.score_field.empty() ? find_field(columns, score_field_names())
                                                           : find_field(columns, {options.score_field});
      if (score_name.empty())
        throw DataError(where + "no score column " +
                        (options.score_field.empty() ? "(score, conf or confidence)" : quoted(options.score_field)) +
                        " (columns: " + join(columns) + ")");
      score_col = index_of(columns, score_name);
      table.original.score_field = score_name;
      for (const auto& k : options.key_fields)
        if (index_of(columns, k) < 0)
          throw DataError(where + "no column " + quoted(k) + " (columns: " + join(columns) + ")");
      table.image_field = find_field(columns, image_field_names());
      table.class_field = find_field(columns, class_field_names());
      auto key_names = key_list(options, table.image_field, table.class_field);
      for (auto& k : key_names) {
        k = columns[static_cast<std::size_t>(index_of(columns, k))];
        key_col.push_back(index_of(columns, k));
      }
      builder.set_key_fields(key_names);
      keys.resize(key_names.size());
      return;
    }
    builder.count_record();
    const std::size_t pos = position++;
    // Built only on error: the message text is not paid per record.
    auto bad = [&](const std::string& what) { builder.bad_record("line " + std::to_string(line_no), what); };
    if (fields.size() != columns.size()) {
      bad("has " + std::to_string(fields.size()) + " fields, the header has " + std::to_string(columns.size()));
      return;
    }
    for (std::size_t j = 0; j < box_col.size(); ++j) {
      std::string err = number_field(line, fields[static_cast<std::size_t>(box_col[j])], box_names[j], &given[j]);
      if (!err.empty()) return bad(err);
    }
    double score;
    const Field& sf = fields[static_cast<std::size_t>(score_col)];
    if (std::string err = number_field(line, sf, columns[static_cast<std::size_t>(score_col)], &score); !err.empty())
      return bad(err);
    if (std::string err = builder.check_finite(given, box_names, score, columns[static_cast<std::size_t>(score_col)]);
        !err.empty())
      return bad(err);
    for (std::size_t k = 0; k < key_col.size(); ++k) {
      const Field& f = fields[static_cast<std::size_t>(key_col[k])];
      keys[k] = line.substr(f.offset, f.size);
    }
    builder.add_row(given, score, pos, keys, Span{line_begin, line.size()}, Span{line_begin + sf.offset, sf.size});
  });
  if (!have_header) throw DataError(table.source + ": empty CSV (a header row is required)");
}

// ---------------------------------------------------------------------------------------------------------
// MOTChallenge det.txt
// ---------------------------------------------------------------------------------------------------------

namespace {
const std::vector<std::string>& mot_names() {
  static const std::vector<std::string> names{"frame",     "id",   "bb_left", "bb_top", "bb_width",
                                              "bb_height", "conf", "x",       "y",      "z"};
  return names;
}
/// 0-based column of a MOT field name: the official names or colN (1-based); -1 if unknown.
int mot_column(std::string_view name) {
  int i = index_of(mot_names(), name);
  if (i >= 0) return i;
  if (name.size() > 3 && iequals(name.substr(0, 3), "col")) {
    double v;
    if (parse_number(name.substr(3), &v) && v >= 1 && v <= 64 && v == static_cast<int>(v))
      return static_cast<int>(v) - 1;
  }
  return -1;
}
}  // namespace

void read_mot(DetectionTable& table, const BoxReadOptions& options) {
  const std::string& text = table.original.text;
  TableBuilder builder(table, options);
  builder.reserve(count_lines(text));
  table.encoding = options.encoding == BoxEncoding::kAuto ? BoxEncoding::kXywh : options.encoding;
  table.image_field = "frame";
  table.class_field.clear();
  table.original.score_field = "conf";
  std::vector<int> key_col;
  for (const auto& k : options.key_fields)
    if (mot_column(k) < 0)
      throw DataError(table.source + ": no field " + quoted(k) + " in MOT records (fields: " + join(mot_names()) +
                      ", or colN)");
  auto key_names = key_list(options, table.image_field, "");
  for (const auto& k : key_names) key_col.push_back(mot_column(k));
  builder.set_key_fields(key_names);
  int needed = 7;
  for (int c : key_col) needed = std::max(needed, c + 1);
  const std::vector<std::string> box_names{"bb_left", "bb_top", "bb_width", "bb_height"};

  std::size_t position = 0;
  std::vector<Field> fields;
  std::vector<std::string_view> keys(key_col.size());
  double given[4];
  for_each_line(text, 0, text.size(), [&](std::size_t line_no, std::size_t line_begin, std::string_view line) {
    if (blank(line)) return;
    builder.count_record();
    const std::size_t pos = position++;
    // Built only on error: the message text is not paid per record.
    auto bad = [&](const std::string& what) { builder.bad_record("line " + std::to_string(line_no), what); };
    split_csv(line, fields);
    if (static_cast<int>(fields.size()) < needed)
      return bad("has " + std::to_string(fields.size()) + " fields, expected at least " + std::to_string(needed) +
                 " (frame,id,bb_left,bb_top,bb_width,bb_height,conf)");
    for (int j = 0; j < 4; ++j)
      if (std::string err = number_field(line, fields[static_cast<std::size_t>(2 + j)],
                                         box_names[static_cast<std::size_t>(j)], &given[j]);
          !err.empty())
        return bad(err);
    double score;
    if (std::string err = number_field(line, fields[6], "conf", &score); !err.empty()) return bad(err);
    if (std::string err = builder.check_finite(given, box_names, score, "conf"); !err.empty()) return bad(err);
    double frame;
    if (std::string err = number_field(line, fields[0], "frame", &frame); !err.empty()) return bad(err);
    for (std::size_t k = 0; k < key_col.size(); ++k) {
      const Field& f = fields[static_cast<std::size_t>(key_col[k])];
      keys[k] = line.substr(f.offset, f.size);
    }
    builder.add_row(given, score, pos, keys, Span{line_begin, line.size()},
                    Span{line_begin + fields[6].offset, fields[6].size});
  });
}

// ---------------------------------------------------------------------------------------------------------
// VOC-style text: `class score left top right bottom`
// ---------------------------------------------------------------------------------------------------------

namespace {
const std::vector<std::string>& voc_names() {
  static const std::vector<std::string> names{"class", "score", "left", "top", "right", "bottom", "image"};
  return names;
}
}  // namespace

void voc_begin(DetectionTable& table, TableBuilder& builder, const BoxReadOptions& options) {
  table.encoding = options.encoding == BoxEncoding::kAuto ? BoxEncoding::kXyxy : options.encoding;
  table.image_field = "image";
  table.class_field = "class";
  table.original.score_field = "score";
  for (const auto& k : options.key_fields)
    if (index_of(voc_names(), k) < 0)
      throw DataError(table.source + ": no field " + quoted(k) + " in voc records (fields: " + join(voc_names()) + ")");
  auto key_names = key_list(options, table.image_field, table.class_field);
  for (auto& k : key_names) k = voc_names()[static_cast<std::size_t>(index_of(voc_names(), k))];
  builder.set_key_fields(key_names);
}

void read_voc_part(DetectionTable& table, TableBuilder& builder, const BoxReadOptions& /*options*/, std::size_t begin,
                   std::size_t end, std::int32_t file_index, const std::string& image, std::size_t* position,
                   const std::string& where_prefix) {
  const std::string& text = table.original.text;
  static const std::vector<std::string> box_names{"left", "top", "right", "bottom"};
  const auto& key_names = builder.key_fields();
  std::vector<Field> fields;
  std::vector<std::string_view> keys(key_names.size());
  double given[4];
  for_each_line(text, begin, end, [&](std::size_t line_no, std::size_t line_begin, std::string_view line) {
    if (blank(line)) return;
    builder.count_record();
    const std::size_t pos = (*position)++;
    auto bad = [&](const std::string& what) {
      builder.bad_record(where_prefix + "line " + std::to_string(line_no), what);
    };
    split_ws(line, fields);
    if (fields.size() < 6)
      return bad("has " + std::to_string(fields.size()) + " fields, expected 6 (class score left top right bottom)");
    // Class names may hold spaces: the last five fields are the numbers, everything before is the class.
    const std::size_t n = fields.size();
    const Field cls{fields[0].offset, fields[n - 6].offset + fields[n - 6].size - fields[0].offset};
    const Field& sf = fields[n - 5];
    double score;
    if (std::string err = number_field(line, sf, "score", &score); !err.empty()) return bad(err);
    for (int j = 0; j < 4; ++j)
      if (std::string err = number_field(line, fields[n - 4 + static_cast<std::size_t>(j)],
                                         box_names[static_cast<std::size_t>(j)], &given[j]);
          !err.empty())
        return bad(err);
    if (std::string err = builder.check_finite(given, box_names, score, "score"); !err.empty()) return bad(err);
    for (std::size_t k = 0; k < key_names.size(); ++k) {
      const int c = index_of(voc_names(), key_names[k]);
      if (c == 0)
        keys[k] = line.substr(cls.offset, cls.size);
      else if (c == 1)
        keys[k] = line.substr(sf.offset, sf.size);
      else if (c == 6)
        keys[k] = image;
      else
        keys[k] = line.substr(fields[n - 4 + static_cast<std::size_t>(c - 2)].offset,
                              fields[n - 4 + static_cast<std::size_t>(c - 2)].size);
    }
    builder.add_row(given, score, pos, keys, Span{line_begin, line.size()}, Span{line_begin + sf.offset, sf.size});
    table.original.file_of.push_back(file_index);
  });
}

}  // namespace s3d::io::detail
