#include "opencv_storage.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "s3d/core/errors.hpp"

namespace s3d::io::opencv_storage {
namespace {

[[noreturn]] void fail(const std::string& source, int line, const std::string& what) {
  throw DataError(source + ": line " + std::to_string(line) + ": " + what);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-'; }

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_blank(s[b])) ++b;
  while (e > b && is_blank(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool wants(const std::vector<std::string>& wanted, const std::string& name) {
  return std::find(wanted.begin(), wanted.end(), name) != wanted.end();
}

// A whole token that is a finite number (calibrations hold no infinities; YAML's `.Nan` is refused too).
bool parse_number(const std::string& token, double* out) {
  if (token.empty() || is_blank(token[0])) return false;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// The numbers of a list with commas or blanks between them. False at a token that is not a number (it is in
// `bad`) or at a token past `limit` (`bad` is empty).
bool parse_numbers(const std::string& list, std::size_t limit, std::vector<double>* out, std::string* bad) {
  out->clear();
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && (is_blank(list[i]) || list[i] == ',')) ++i;
    std::size_t j = i;
    while (j < list.size() && !is_blank(list[j]) && list[j] != ',') ++j;
    if (j == i) break;
    double v = 0.0;
    bad->clear();
    if (out->size() == limit) return false;
    if (!parse_number(list.substr(i, j - i), &v)) {
      *bad = list.substr(i, std::min<std::size_t>(j - i, 32));
      return false;
    }
    out->push_back(v);
    i = j;
  }
  return true;
}

// The fields a matrix is written with, as text; assembled and checked in one place for both syntaxes.
struct MatrixFields {
  std::string rows, cols, dt, data;
  bool has_rows = false, has_cols = false, has_dt = false, has_data = false;

  void set(const std::string& field, std::string value, const std::string& source, int line, const std::string& name) {
    std::pair<std::string*, bool*> slot{nullptr, nullptr};
    if (field == "rows") slot = {&rows, &has_rows};
    if (field == "cols") slot = {&cols, &has_cols};
    if (field == "dt") slot = {&dt, &has_dt};
    if (field == "data") slot = {&data, &has_data};
    if (slot.first == nullptr) fail(source, line, name + ": unknown matrix field '" + field.substr(0, 32) + "'");
    if (*slot.second) fail(source, line, name + ": matrix field '" + field + "' given twice");
    *slot.first = std::move(value);
    *slot.second = true;
  }

  Entry to_entry(const std::string& source, int line, const std::string& name) const {
    if (!has_rows || !has_cols || !has_dt || !has_data)
      fail(source, line, name + ": a matrix needs rows, cols, dt and data");
    const std::string shape = name + ": rows and cols must be whole numbers from 1 to " + std::to_string(kMaxSide);
    double r = 0.0, c = 0.0;
    if (!parse_number(trim(rows), &r) || !parse_number(trim(cols), &c) || r != std::floor(r) || c != std::floor(c) ||
        r < 1 || c < 1 || r > kMaxSide || c > kMaxSide)
      fail(source, line, shape);
    const std::string type = trim(dt);
    if (type.size() != 1 || std::string("ucswifdh").find(type[0]) == std::string::npos)
      fail(source, line, name + ": dt must be one of u c s w i f d h (one channel), not '" + type.substr(0, 16) + "'");
    Entry e;
    e.matrix = true;
    e.rows = static_cast<int>(r);
    e.cols = static_cast<int>(c);
    e.line = line;
    std::string bad;
    const std::size_t count = static_cast<std::size_t>(e.rows) * static_cast<std::size_t>(e.cols);
    const bool only_numbers = parse_numbers(data, count, &e.values, &bad);
    if (!only_numbers && !bad.empty()) fail(source, line, name + ": data holds '" + bad + "', not a finite number");
    if (!only_numbers || e.values.size() != count)
      fail(source, line, name + ": data must hold rows x cols = " + std::to_string(count) + " numbers");
    return e;
  }
};

// ---- YAML -------------------------------------------------------------------------------------------------

struct Line {
  int number = 0;
  std::string text;  // without a trailing comment or '\r'
};

std::vector<Line> yaml_lines(const std::string& text) {
  std::vector<Line> lines;
  std::size_t start = 0;
  for (int number = 1; start <= text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string s = text.substr(start, end - start);
    // A comment starts at a '#' that begins the line or follows a blank (YAML 1.2, section 6.6).
    for (std::size_t i = 0; i < s.size(); ++i)
      if (s[i] == '#' && (i == 0 || is_blank(s[i - 1]))) {
        s.resize(i);
        break;
      }
    while (!s.empty() && is_blank(s.back())) s.pop_back();
    lines.push_back({number, std::move(s)});
    start = end + 1;
  }
  return lines;
}

// The body of a `!!opencv-matrix` entry: `name: value` fields, `data: [ ... ]` across lines.
Entry yaml_matrix(const std::string& body, const std::string& source, int line, const std::string& name) {
  MatrixFields fields;
  std::size_t i = 0;
  for (;;) {
    while (i < body.size() && (is_blank(body[i]) || body[i] == ',')) ++i;
    if (i == body.size()) break;
    const std::size_t name_start = i;
    while (i < body.size() && is_name_char(body[i])) ++i;
    const std::string field = body.substr(name_start, i - name_start);
    while (i < body.size() && (body[i] == ' ' || body[i] == '\t')) ++i;
    if (field.empty() || i == body.size() || body[i] != ':')
      fail(source, line, name + ": expected the matrix's fields as 'rows: N' lines");
    ++i;
    while (i < body.size() && is_blank(body[i])) ++i;
    std::string value;
    if (field == "data") {
      const std::size_t close = body.find(']', i);
      if (i == body.size() || body[i] != '[' || close == std::string::npos)
        fail(source, line, name + ": data must be a list [ ... ]");
      value = body.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      const std::size_t end = std::min(body.find('\n', i), body.size());
      value = body.substr(i, end - i);
      i = end;
    }
    fields.set(field, std::move(value), source, line, name);
  }
  return fields.to_entry(source, line, name);
}

std::map<std::string, Entry> read_yaml(const std::string& text, const std::vector<std::string>& wanted,
                                       const std::string& source) {
  const std::vector<Line> lines = yaml_lines(text);
  std::map<std::string, Entry> entries;
  std::size_t i = 0;
  auto skip_empty = [&] {
    while (i < lines.size() && lines[i].text.empty()) ++i;
  };
  skip_empty();
  if (i < lines.size() && lines[i].text.rfind("%YAML", 0) == 0) ++i;
  while (i < lines.size()) {
    const Line& head = lines[i++];
    if (head.text.empty() || head.text == "---") continue;
    if (head.text == "...") break;
    if (is_blank(head.text[0]) || !is_name_start(head.text[0]))
      fail(source, head.number, "expected 'name: value' at the start of a line");
    std::size_t k = 0;
    while (k < head.text.size() && is_name_char(head.text[k])) ++k;
    const std::string name = head.text.substr(0, k);
    while (k < head.text.size() && (head.text[k] == ' ' || head.text[k] == '\t')) ++k;
    if (k == head.text.size() || head.text[k] != ':' ||
        (k + 1 < head.text.size() && head.text[k + 1] != ' ' && head.text[k + 1] != '\t'))
      fail(source, head.number, "expected 'name: value' at the start of a line");
    const std::string value = trim(head.text.substr(k + 1));
    // The entry goes on over the indented (and empty) lines that follow.
    std::string body;
    while (i < lines.size() && (lines[i].text.empty() || is_blank(lines[i].text[0]))) body += lines[i++].text + "\n";
    if (!wants(wanted, name)) continue;
    if (entries.count(name) != 0) fail(source, head.number, name + " is given twice");
    if (value.rfind("!!opencv-matrix", 0) == 0) {
      if (trim(value.substr(15)).size() != 0)
        fail(source, head.number, name + ": expected the matrix's fields on the lines below its tag");
      entries[name] = yaml_matrix(body, source, head.number, name);
      continue;
    }
    Entry e;
    e.rows = e.cols = 1;
    e.line = head.number;
    e.values.resize(1);
    if (!trim(body).empty() || !parse_number(value, &e.values[0]))
      fail(source, head.number, name + " must be a number or an !!opencv-matrix");
    entries[name] = std::move(e);
  }
  return entries;
}

// ---- XML --------------------------------------------------------------------------------------------------

struct Element {
  std::string name;
  std::string type_id;
  std::string text;
  std::vector<Element> children;
  int line = 0;
};

// A small XML reader: elements, attributes (only `type_id` kept), text, comments, a prolog. No entities, no
// CDATA: calibrations have none. Nesting is limited so that hostile input cannot exhaust the stack.
class XmlReader {
 public:
  XmlReader(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Element document() {
    for (;;) {
      skip_blanks();
      if (starts_with("<?")) {
        skip_past("?>");
      } else if (starts_with("<!--")) {
        skip_past("-->");
      } else {
        break;
      }
    }
    if (!starts_with("<opencv_storage")) fail(source_, line(), "expected <opencv_storage>");
    Element root = element(0);
    if (root.name != "opencv_storage") fail(source_, root.line, "expected <opencv_storage>");
    for (;;) {
      skip_blanks();
      if (!starts_with("<!--")) break;
      skip_past("-->");
    }
    if (pos_ != text_.size()) fail(source_, line(), "text after </opencv_storage>");
    return root;
  }

 private:
  static constexpr int kMaxDepth = 16;

  bool starts_with(const char* s) const { return text_.compare(pos_, std::char_traits<char>::length(s), s) == 0; }
  void skip_blanks() {
    while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
  }
  void skip_past(const char* end) {
    const std::size_t at = text_.find(end, pos_);
    if (at == std::string::npos) fail(source_, line(), std::string("no closing ") + end);
    pos_ = at + std::char_traits<char>::length(end);
  }
  // The line of pos_, counted forward from the last call (pos_ only grows).
  int line() {
    for (; counted_ < pos_ && counted_ < text_.size(); ++counted_)
      if (text_[counted_] == '\n') ++line_;
    return line_;
  }
  std::string name() {
    const std::size_t start = pos_;
    if (pos_ < text_.size() && is_name_start(text_[pos_]))
      while (pos_ < text_.size() && (is_name_char(text_[pos_]) || text_[pos_] == '.' || text_[pos_] == ':')) ++pos_;
    if (pos_ == start) fail(source_, line(), "expected an element name");
    return text_.substr(start, pos_ - start);
  }

  // At '<' of an opening tag: the element up to and including its closing tag.
  Element element(int depth) {
    if (depth > kMaxDepth) fail(source_, line(), "elements nested deeper than " + std::to_string(kMaxDepth));
    Element e;
    e.line = line();
    ++pos_;
    e.name = name();
    for (;;) {
      skip_blanks();
      if (starts_with("/>")) {
        pos_ += 2;
        return e;
      }
      if (starts_with(">")) {
        ++pos_;
        break;
      }
      const std::string attribute = name();
      skip_blanks();
      if (!starts_with("=")) fail(source_, line(), e.name + ": expected '=' after attribute " + attribute);
      ++pos_;
      skip_blanks();
      if (pos_ == text_.size() || (text_[pos_] != '"' && text_[pos_] != '\''))
        fail(source_, line(), e.name + ": attribute value must be quoted");
      const char quote = text_[pos_++];
      const std::size_t close = text_.find(quote, pos_);
      if (close == std::string::npos) fail(source_, line(), e.name + ": unterminated attribute value");
      if (attribute == "type_id") e.type_id = text_.substr(pos_, close - pos_);
      pos_ = close + 1;
    }
    for (;;) {
      const std::size_t lt = text_.find('<', pos_);
      if (lt == std::string::npos) fail(source_, line(), "<" + e.name + "> is not closed");
      e.text.append(text_, pos_, lt - pos_);
      pos_ = lt;
      if (starts_with("<!--")) {
        skip_past("-->");
      } else if (starts_with("</")) {
        pos_ += 2;
        const std::string closing = name();
        skip_blanks();
        if (closing != e.name || !starts_with(">"))
          fail(source_, line(), "<" + e.name + "> closed by </" + closing.substr(0, 32) + ">");
        ++pos_;
        return e;
      } else {
        e.children.push_back(element(depth + 1));
      }
    }
  }

  const std::string& text_;
  const std::string& source_;
  std::size_t pos_ = 0;
  std::size_t counted_ = 0;
  int line_ = 1;
};

std::map<std::string, Entry> read_xml(const std::string& text, const std::vector<std::string>& wanted,
                                      const std::string& source) {
  const Element root = XmlReader(text, source).document();
  std::map<std::string, Entry> entries;
  for (const Element& child : root.children) {
    if (!wants(wanted, child.name)) continue;
    if (entries.count(child.name) != 0) fail(source, child.line, child.name + " is given twice");
    if (child.type_id == "opencv-matrix") {
      MatrixFields fields;
      for (const Element& f : child.children) fields.set(f.name, f.text, source, f.line, child.name);
      entries[child.name] = fields.to_entry(source, child.line, child.name);
      continue;
    }
    Entry e;
    e.rows = e.cols = 1;
    e.line = child.line;
    e.values.resize(1);
    if (!child.children.empty() || !parse_number(trim(child.text), &e.values[0]))
      fail(source, child.line, child.name + " must be a number or an opencv-matrix");
    entries[child.name] = std::move(e);
  }
  return entries;
}

// Whether the first thing in `text` (after blanks, an XML prolog and comments) is an element.
bool starts_as_xml(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '<';
}

}  // namespace

bool looks_like(const std::string& text) {
  return text.rfind("%YAML", 0) == 0 || text.find("<opencv_storage>") != std::string::npos;
}

std::map<std::string, Entry> read(const std::string& text, const std::vector<std::string>& wanted,
                                  const std::string& source) {
  return starts_as_xml(text) ? read_xml(text, wanted, source) : read_yaml(text, wanted, source);
}

}  // namespace s3d::io::opencv_storage
