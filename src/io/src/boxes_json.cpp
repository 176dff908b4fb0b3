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
      if (t[i] == '\\') ++i;
      else if (t[i] == '"') return i + 1;
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

std::string key_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

/// Parses records (objects) shared by coco and jsonl, resolving the field names on the first object.
class JsonRecords {
 public:
  JsonRecords(DetectionTable& table, const BoxReadOptions& options) : table_(table), options_(options), builder_(table, options) {}

  void record(std::string_view text, Span span, std::size_t position, const std::string& where) {
    builder_.count_record();
    json obj;
    try {
      obj = json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
      std::string bad = non_finite_token(text);
      if (!bad.empty()) return builder_.bad_record(where, "non-finite number " + bad + " (JSON allows finite numbers only)");
      return builder_.bad_record(where, "invalid JSON: " + parse_error_text(e));
    }
    if (!obj.is_object()) return builder_.bad_record(where, "not a JSON object");
    if (!resolved_ && !resolve(obj, where)) return;
    double given[5];
    const int dim = table_.box_dim();
    if (!bbox_key_.empty()) {
      auto it = obj.find(bbox_key_);
      if (it == obj.end() || it->is_null()) return builder_.bad_record(where, bbox_key_ + " is missing");
      if (!it->is_array() || static_cast<int>(it->size()) != dim)
        return builder_.bad_record(where, bbox_key_ + " is not an array of " + std::to_string(dim) + " numbers");
      for (int j = 0; j < dim; ++j) {
        const json& v = (*it)[static_cast<std::size_t>(j)];
        if (!v.is_number())
          return builder_.bad_record(where, bbox_key_ + "[" + std::to_string(j) + "] is not a number");
        given[j] = v.get<double>();
      }
    } else {
      for (int j = 0; j < dim; ++j) {
        const std::string& name = box_names_[static_cast<std::size_t>(j)];
        auto it = obj.find(name);
        if (it == obj.end() || it->is_null()) return builder_.bad_record(where, name + " is missing");
        if (!it->is_number()) return builder_.bad_record(where, name + " is not a number");
        given[j] = it->get<double>();
      }
    }
    auto s = obj.find(score_key_);
    if (s == obj.end() || s->is_null()) return builder_.bad_record(where, score_key_ + " is missing");
    if (!s->is_number()) return builder_.bad_record(where, score_key_ + " is not a number");
    const double score = s->get<double>();
    if (std::string err = builder_.check_finite(given, check_names_, score, score_key_); !err.empty())
      return builder_.bad_record(where, err);
    const auto& key_names = builder_.key_fields();
    key_values_.resize(key_names.size());
    key_views_.resize(key_names.size());
    for (std::size_t k = 0; k < key_names.size(); ++k) {
      auto it = obj.find(key_names[k]);
      if (it == obj.end() || it->is_null()) return builder_.bad_record(where, key_names[k] + " is missing");
      key_values_[k] = key_text(*it);
      key_views_[k] = key_values_[k];
    }
    builder_.add_row(given, score, position, key_views_, span, Span{});
  }

 private:
  /// Picks the box, score, image, class and key fields from the first valid object.
  bool resolve(const json& obj, const std::string& where) {
    std::vector<std::string> names;
    for (auto it = obj.begin(); it != obj.end(); ++it) names.push_back(it.key());
    std::string bbox = options_.box_fields.empty() ? find_field(names, {"bbox"}) : std::string();
    if (!bbox.empty()) {
      bbox_key_ = bbox;
      table_.encoding = options_.rotated ? BoxEncoding::kCxcywh
                        : options_.encoding == BoxEncoding::kAuto ? BoxEncoding::kXywh
                                                                  : options_.encoding;
      for (int j = 0; j < table_.box_dim(); ++j) check_names_.push_back(bbox + "[" + std::to_string(j) + "]");
    } else {
      BoxEncoding encoding = BoxEncoding::kXyxy;
      box_names_ = choose_box_fields(names, options_, &encoding);
      if (box_names_.empty()) {
        builder_.bad_record(where, "no bbox and no box fields " + expected_box_fields(options_));
        return false;
      }
      if (std::string angle = forgotten_angle(names, options_); !angle.empty())
        throw DataError(table_.source + ": " + where + ": " + angle);
      table_.encoding = encoding;
      check_names_ = box_names_;
    }
    score_key_ = options_.score_field.empty() ? find_field(names, score_field_names())
                                              : find_field(names, {options_.score_field});
    if (score_key_.empty()) {
      builder_.bad_record(where, "no score field " + (options_.score_field.empty() ? std::string("(score, conf or confidence)")
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
    resolved_ = true;
    return true;
  }

  DetectionTable& table_;
  const BoxReadOptions& options_;
  TableBuilder builder_;
  bool resolved_ = false;
  std::string bbox_key_, score_key_;
  std::vector<std::string> box_names_, check_names_;
  std::vector<std::string> key_values_;
  std::vector<std::string_view> key_views_;
};

std::size_t count_newlines(const std::string& t, std::size_t from, std::size_t to) {
  return static_cast<std::size_t>(std::count(t.begin() + static_cast<std::ptrdiff_t>(from),
                                             t.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
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
      const std::string where = "record " + std::to_string(index + 1) + " (line " + std::to_string(line) + ")";
      records.record(t.substr(begin, end - begin), Span{begin, end - begin}, index, where);
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
      records.record(line, Span{pos, len}, index, "line " + std::to_string(line_no));
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
