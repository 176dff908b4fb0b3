// JSON box formats: COCO results (one top-level array) and JSON Lines.
// The COCO array is split into its elements by a small scanner and each element is parsed on its own, so
// that a bad element (including Python's NaN/Infinity, which JSON forbids) is a record error with a record
// number that --drop-invalid can skip, and each element's original bytes are kept for the writer.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "boxes_internal.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::io::detail {
namespace {

using Span = OriginalRecords::Span;
using nlohmann::json;

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// End (one past) of the JSON value starting at `pos`, or npos when it is not terminated. Tracks nesting
/// and strings only; the value's syntax is checked by the parser later.
std::size_t scan_value(std::string_view t, std::size_t pos) {
  const std::size_t n = t.size();
  if (pos >= n) return std::string_view::npos;
  if (t[pos] == '"') {
    for (std::size_t i = pos + 1; i < n; ++i) {
      if (t[i] == '\\')
        ++i;
      else if (t[i] == '"')
        return i + 1;
    }
    return std::string_view::npos;
  }
  if (t[pos] == '{' || t[pos] == '[') {
    int depth = 0;
    for (std::size_t i = pos; i < n; ++i) {
      const char c = t[i];
      if (c == '"') {
        for (++i; i < n && t[i] != '"'; ++i)
          if (t[i] == '\\') ++i;
        if (i >= n) return std::string_view::npos;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return std::string_view::npos;
  }
  std::size_t i = pos;
  while (i < n && t[i] != ',' && t[i] != ']' && t[i] != '}' && !is_ws(t[i])) ++i;
  return i;
}

/// NaN / Infinity / -Infinity outside strings (Python's json module writes them); "" if none.
std::string non_finite_token(std::string_view t) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '"') {
      for (++i; i < t.size() && t[i] != '"'; ++i)
        if (t[i] == '\\') ++i;
      continue;
    }
    if (t.compare(i, 3, "NaN") == 0) return "NaN";
    if (t.compare(i, 8, "Infinity") == 0) return (i > 0 && t[i - 1] == '-') ? "-Infinity" : "Infinity";
  }
  return {};
}

std::string parse_error_text(const std::exception& e) {
  std::string what = e.what();
  // nlohmann's messages start with "[json.exception.parse_error.101] ": keep the readable part.
  if (auto p = what.find("] "); p != std::string::npos && what.front() == '[') what = what.substr(p + 2);
  return what;
}

/// Where a record is, for messages; formatted only on error.
struct Where {
  bool array = false;      ///< coco: "record N (line L)"; jsonl: "line L"
  std::size_t record = 0;  ///< 1-based
  std::size_t line = 0;    ///< 1-based
  std::string text() const {
    return array ? "record " + std::to_string(record) + " (line " + std::to_string(line) + ")"
                 : "line " + std::to_string(line);
  }
};

/// A value of one field of a record, as the SAX pass saw it.
struct Seen {
  enum Kind { kAbsent, kNull, kNumber, kString, kBool, kArray, kObject } kind = kAbsent;
  double number = 0;
  std::string text;  ///< a scalar's text (numbers as written, strings unquoted)
};

/// SAX handler pulling only the fields a record needs out of one JSON object, without building a DOM: a large
/// COCO file is never held as a tree, and unused fields are skipped (docs/NMS-FILTER.md has the speed-up).
/// Roles: bbox array, named box fields, score, keys.
struct RecordSax {
  // Configuration (names as spelled in the file).
  const std::string* bbox_key = nullptr;
  const std::vector<std::string>* box_names = nullptr;
  const std::string* score_key = nullptr;
  const std::vector<std::string>* key_names = nullptr;

  // Results.
  bool top_is_object = false;
  Seen bbox, score;
  std::vector<double> bbox_numbers;
  int bbox_non_number = -1;  ///< index of the first non-number element of bbox, or -1
  std::vector<Seen> box, keys;
  std::string error;

  // State.
  int depth = 0;
  Seen* current = nullptr;  ///< the field whose value comes next (depth 1), or null
  bool in_bbox = false;

  void reset(int dim, std::size_t key_count) {
    top_is_object = false;
    bbox = Seen{};
    score = Seen{};
    bbox_numbers.clear();
    bbox_numbers.reserve(static_cast<std::size_t>(dim));
    bbox_non_number = -1;
    box.assign(box_names ? box_names->size() : 0, Seen{});
    keys.assign(key_count, Seen{});
    error.clear();
    depth = 0;
    current = nullptr;
    in_bbox = false;
  }

  void scalar(Seen::Kind kind, double number, const std::string& text) {
    if (in_bbox && depth == 2) {
      if (kind == Seen::kNumber)
        bbox_numbers.push_back(number);
      else {
        if (bbox_non_number < 0) bbox_non_number = static_cast<int>(bbox_numbers.size());
        bbox_numbers.push_back(0);
      }
      return;
    }
    if (depth != 1 || !current) return;
    current->kind = kind;
    current->number = number;
    current->text = text;
    current = nullptr;
  }

  bool null() {
    scalar(Seen::kNull, 0, "null");
    return true;
  }
  bool boolean(bool v) {
    scalar(Seen::kBool, 0, v ? "true" : "false");
    return true;
  }
  bool number_integer(json::number_integer_t v) {
    scalar(Seen::kNumber, static_cast<double>(v), std::to_string(v));
    return true;
  }
  bool number_unsigned(json::number_unsigned_t v) {
    scalar(Seen::kNumber, static_cast<double>(v), std::to_string(v));
    return true;
  }
  bool number_float(json::number_float_t v, const std::string& text) {
    scalar(Seen::kNumber, v, text);
    return true;
  }
  bool string(std::string& v) {
    scalar(Seen::kString, 0, v);
    return true;
  }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) {
    if (depth == 0) top_is_object = true;
    nested(Seen::kObject);
    ++depth;
    return true;
  }
  bool end_object() {
    --depth;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth == 1 && current == &bbox) {
      bbox.kind = Seen::kArray;
      in_bbox = true;
      current = nullptr;
    } else {
      nested(Seen::kArray);
    }
    ++depth;
    return true;
  }
  bool end_array() {
    --depth;
    if (depth == 1) in_bbox = false;
    return true;
  }
  bool key(std::string& k) {
    if (depth != 1) return true;
    current = nullptr;
    if (bbox_key && k == *bbox_key)
      current = &bbox;
    else if (score_key && k == *score_key)
      current = &score;
    if (box_names)
      for (std::size_t j = 0; j < box_names->size() && !current; ++j)
        if (k == (*box_names)[j]) current = &box[j];
    if (key_names)
      for (std::size_t j = 0; j < key_names->size() && !current; ++j)
        if (k == (*key_names)[j]) current = &keys[j];
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error = parse_error_text(e);
    return false;
  }

 private:
  /// A nested object/array as the value of a tracked field (or inside bbox).
  void nested(Seen::Kind kind) {
    if (in_bbox && depth == 2) {
      if (bbox_non_number < 0) bbox_non_number = static_cast<int>(bbox_numbers.size());
      bbox_numbers.push_back(0);
      return;
    }
    if (depth == 1 && current) {
      current->kind = kind;
      current = nullptr;
    }
  }
};

/// Parses records (objects) shared by coco and jsonl, resolving the field names on the first object.
class JsonRecords {
 public:
  JsonRecords(DetectionTable& table, const BoxReadOptions& options)
      : table_(table), options_(options), builder_(table, options) {}

  void record(std::string_view text, Span span, std::size_t position, const Where& where) {
    builder_.count_record();
    auto bad = [&](const std::string& what) { builder_.bad_record(where.text(), what); };
    if (!resolved_) {
      // The first object decides the field names (a DOM parse, once).
      json obj;
      try {
        obj = json::parse(text.begin(), text.end());
      } catch (const json::exception& e) {
        return bad_json(text, parse_error_text(e), bad);
      }
      if (!obj.is_object()) return bad("not a JSON object");
      if (!resolve(obj, where)) return;
    }
    sax_.reset(table_.box_dim(), builder_.key_fields().size());
    const bool ok = json::sax_parse(text.begin(), text.end(), &sax_);
    if (!ok) return bad_json(text, sax_.error, bad);
    if (!sax_.top_is_object) return bad("not a JSON object");

    double given[5];
    const int dim = table_.box_dim();
    if (!bbox_key_.empty()) {
      const Seen& b = sax_.bbox;
      if (b.kind == Seen::kAbsent || b.kind == Seen::kNull) return bad(bbox_key_ + " is missing");
      if (b.kind != Seen::kArray || static_cast<int>(sax_.bbox_numbers.size()) != dim)
        return bad(bbox_key_ + " is not an array of " + std::to_string(dim) + " numbers");
      if (sax_.bbox_non_number >= 0)
        return bad(bbox_key_ + "[" + std::to_string(sax_.bbox_non_number) + "] is not a number");
      std::copy(sax_.bbox_numbers.begin(), sax_.bbox_numbers.end(), given);
    } else {
      for (int j = 0; j < dim; ++j) {
        const Seen& v = sax_.box[static_cast<std::size_t>(j)];
        const std::string& name = box_names_[static_cast<std::size_t>(j)];
        if (v.kind == Seen::kAbsent || v.kind == Seen::kNull) return bad(name + " is missing");
        if (v.kind != Seen::kNumber) return bad(name + " is not a number");
        given[j] = v.number;
      }
    }
    const Seen& s = sax_.score;
    if (s.kind == Seen::kAbsent || s.kind == Seen::kNull) return bad(score_key_ + " is missing");
    if (s.kind != Seen::kNumber) return bad(score_key_ + " is not a number");
    if (std::string err = builder_.check_finite(given, check_names_, s.number, score_key_); !err.empty())
      return bad(err);
    const auto& key_names = builder_.key_fields();
    key_views_.resize(key_names.size());
    for (std::size_t k = 0; k < key_names.size(); ++k) {
      const Seen& v = sax_.keys[k];
      if (v.kind == Seen::kAbsent || v.kind == Seen::kNull) return bad(key_names[k] + " is missing");
      if (v.kind == Seen::kArray || v.kind == Seen::kObject) return bad(key_names[k] + " is not a single value");
      key_views_[k] = v.text;
    }
    builder_.add_row(given, s.number, position, key_views_, span, Span{});
  }

 private:
  template <class Bad>
  static void bad_json(std::string_view text, const std::string& parser_message, Bad& bad) {
    std::string token = non_finite_token(text);
    if (!token.empty()) return bad("non-finite number " + token + " (JSON allows finite numbers only)");
    bad("invalid JSON: " + parser_message);
  }

  /// Picks the box, score, image, class and key fields from the first valid object.
  bool resolve(const json& obj, const Where& where) {
    std::vector<std::string> names;
    for (auto it = obj.begin(); it != obj.end(); ++it) names.push_back(it.key());
    std::string bbox = options_.box_fields.empty() ? find_field(names, {"bbox"}) : std::string();
    if (!bbox.empty()) {
      bbox_key_ = bbox;
      table_.encoding = options_.rotated                          ? BoxEncoding::kCxcywh
                        : options_.encoding == BoxEncoding::kAuto ? BoxEncoding::kXywh
                                                                  : options_.encoding;
      for (int j = 0; j < table_.box_dim(); ++j) check_names_.push_back(bbox + "[" + std::to_string(j) + "]");
    } else {
      BoxEncoding encoding = BoxEncoding::kXyxy;
      box_names_ = choose_box_fields(names, options_, &encoding);
      if (box_names_.empty()) {
        builder_.bad_record(where.text(), "no bbox and no box fields " + expected_box_fields(options_));
        return false;
      }
      if (std::string angle = forgotten_angle(names, options_); !angle.empty())
        throw DataError(table_.source + ": " + where.text() + ": " + angle);
      table_.encoding = encoding;
      check_names_ = box_names_;
    }
    score_key_ = options_.score_field.empty() ? find_field(names, score_field_names())
                                              : find_field(names, {options_.score_field});
    if (score_key_.empty()) {
      builder_.bad_record(where.text(),
                          "no score field " + (options_.score_field.empty() ? std::string("(score, conf or confidence)")
                                                                            : "'" + options_.score_field + "'"));
      return false;
    }
    table_.original.score_field = score_key_;
    table_.image_field = find_field(names, image_field_names());
    table_.class_field = find_field(names, class_field_names());
    std::vector<std::string> keys;
    auto add = [&](std::string k) {
      if (k.empty()) return;
      std::string spelled = find_field(names, {k});
      if (!spelled.empty()) k = spelled;
      for (const auto& x : keys)
        if (iequals(x, k)) return;
      keys.push_back(k);
    };
    for (const auto& k : options_.key_fields) add(k);
    add(table_.image_field);
    add(table_.class_field);
    builder_.set_key_fields(keys);
    sax_.bbox_key = bbox_key_.empty() ? nullptr : &bbox_key_;
    sax_.box_names = &box_names_;
    sax_.score_key = &score_key_;
    sax_.key_names = &builder_.key_fields();
    resolved_ = true;
    return true;
  }

  DetectionTable& table_;
  const BoxReadOptions& options_;
  TableBuilder builder_;
  bool resolved_ = false;
  std::string bbox_key_, score_key_;
  std::vector<std::string> box_names_, check_names_;
  std::vector<std::string_view> key_views_;
  RecordSax sax_;
};

std::size_t count_newlines(const std::string& t, std::size_t from, std::size_t to) {
  return static_cast<std::size_t>(
      std::count(t.begin() + static_cast<std::ptrdiff_t>(from), t.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
}

}  // namespace

void read_coco(DetectionTable& table, const BoxReadOptions& options) {
  const std::string& text = table.original.text;
  std::string_view t(text);
  std::size_t pos = t.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  auto skip_ws = [&] {
    while (pos < t.size() && is_ws(t[pos])) ++pos;
  };
  skip_ws();
  if (pos >= t.size()) throw DataError(table.source + ": empty input, expected a JSON array of detections");
  if (t[pos] != '[')
    throw DataError(table.source + ": expected a JSON array of detections (COCO results), found '" +
                    std::string(1, t[pos]) + "'");
  JsonRecords records(table, options);
  std::size_t line = 1 + count_newlines(text, 0, pos);
  std::size_t counted_to = pos;
  ++pos;
  skip_ws();
  std::size_t index = 0;
  if (pos < t.size() && t[pos] == ']') {
    ++pos;
  } else {
    while (true) {
      skip_ws();
      const std::size_t begin = pos;
      const std::size_t end = scan_value(t, begin);
      line += count_newlines(text, counted_to, begin);
      counted_to = begin;
      if (end == std::string_view::npos || begin >= t.size())
        throw DataError(table.source + ": record " + std::to_string(index + 1) + " (line " + std::to_string(line) +
                        "): unterminated JSON value (truncated file?)");
      records.record(t.substr(begin, end - begin), Span{begin, end - begin}, index, Where{true, index + 1, line});
      ++index;
      pos = end;
      skip_ws();
      if (pos < t.size() && t[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < t.size() && t[pos] == ']') {
        ++pos;
        break;
      }
      line += count_newlines(text, counted_to, std::min(pos, t.size()));
      throw DataError(table.source + ": line " + std::to_string(line) + ": expected ',' or ']' after record " +
                      std::to_string(index) + (pos >= t.size() ? " (truncated file?)" : ""));
    }
  }
  skip_ws();
  if (pos < t.size())
    throw DataError(table.source + ": line " + std::to_string(1 + count_newlines(text, 0, pos)) +
                    ": unexpected text after the JSON array");
}

void read_jsonl(DetectionTable& table, const BoxReadOptions& options) {
  const std::string& text = table.original.text;
  JsonRecords records(table, options);
  std::size_t pos = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  std::size_t line_no = 0, index = 0;
  while (pos < text.size()) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    const std::size_t stop = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    ++line_no;
    std::size_t len = stop - pos;
    if (len > 0 && text[pos + len - 1] == '\r') --len;
    std::string_view line(text.data() + pos, len);
    if (!trim(line).empty()) {
      records.record(line, Span{pos, len}, index, Where{false, index + 1, line_no});
      ++index;
    }
    pos = stop + 1;
  }
}

std::string rewrite_json_score(std::string_view record, const std::string& score_field, double score) {
  nlohmann::ordered_json obj = nlohmann::ordered_json::parse(record.begin(), record.end());
  double value = score;
  parse_number(format_number(score), &value);  // so the dump shows the short form (0.3, not 0.30000001...)
  obj[score_field] = value;
  return obj.dump();
}

}  // namespace s3d::io::detail
