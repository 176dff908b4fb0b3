#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cloud_codec.hpp"
#include "quoted.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "s3d/core/errors.hpp"

namespace s3d::io::detail {
namespace {

template <typename T>
bool parse_integer(std::string_view token, std::uint8_t* out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  T v{};
  const auto r = std::from_chars(token.data(), token.data() + token.size(), v);
  if (r.ec == std::errc() && r.ptr == token.data() + token.size()) {
    std::memcpy(out, &v, sizeof(T));
    return true;
  }
  // Some writers print integers as floats ("3.0"): accept those that are integral and in range.
  const std::string copy(token);
  char* stop = nullptr;
  const double d = std::strtod(copy.c_str(), &stop);
  if (copy.empty() || *stop != '\0' || !std::isfinite(d) || d != std::floor(d) ||
      d < static_cast<double>(std::numeric_limits<T>::lowest()) ||
      d > static_cast<double>(std::numeric_limits<T>::max()))
    return false;
  v = static_cast<T>(d);
  std::memcpy(out, &v, sizeof(T));
  return true;
}

template <typename T>
bool parse_floating(std::string_view token, std::uint8_t* out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  T v{};
  const auto r = std::from_chars(token.data(), token.data() + token.size(), v);
  if (r.ptr != token.data() + token.size() || token.empty()) return false;
  if (r.ec == std::errc::result_out_of_range) {
    // from_chars refuses subnormals and overflow. A subnormal reads as the nearest value (0 or denormal); a finite
    // number beyond T's range is a bad value, as an integer beyond its type's range is (inf is written "inf").
    const std::string copy(token);
    const long double wide = std::strtold(copy.c_str(), nullptr);
    if (std::fabs(wide) > static_cast<long double>(std::numeric_limits<T>::max())) return false;
    v = static_cast<T>(wide);
  } else if (r.ec != std::errc()) {
    return false;
  }
  std::memcpy(out, &v, sizeof(T));
  return true;
}

template <typename T>
void append_text(const std::uint8_t* value, std::string* out) {
  T v;
  std::memcpy(&v, value, sizeof(T));
  char buf[64];
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) {
      out->append("nan");
      return;
    }
  }
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

bool is_position(const std::string& name) { return name == "x" || name == "y" || name == "z"; }

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw IoError(path + ": cannot read (not a regular file?)");
  in.seekg(0, std::ios::beg);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), size)) throw IoError(path + ": read failed");
  return bytes;
}

FileBytes::FileBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    // Not MAP_POPULATE: the kernel's fault-around maps 16 cached pages a fault as the readers go, which
    // measured ~0.2 ms less than populating all of a 7.5 MB PLY up front (docs/PERFORMANCE.md).
    void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      ::close(fd);
      map_ = map;
      data_ = static_cast<const char*>(map);
      size_ = static_cast<std::size_t>(st.st_size);
      return;
    }
  }
  if (fd >= 0) ::close(fd);
  copy_ = read_file_bytes(path);  // pipes, devices, empty files, or mmap refused: its errors name the file
  data_ = copy_.data();
  size_ = copy_.size();
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

void advise_huge_pages(void* data, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // a hint: errors ignored
#else
  (void)data, (void)bytes;
#endif
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path + ": cannot open for writing: " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) throw io_error_with_reason(path, "write failed");
}

bool TextCursor::next(std::string_view* token) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')) ++p;
  if (p == end) return false;
  const char* start = p;
  while (p < end && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v')) ++p;
  *token = std::string_view(start, static_cast<std::size_t>(p - start));
  return true;
}

namespace {
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
}  // namespace

bool TextLines::next_line() {
  p_ = line_end_;
  while (p_ < end_) {
    if (*p_ == '\n') ++p_;
    const char* start = p_;
    const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_));
    line_end_ = nl ? static_cast<const char*>(nl) : end_;
    while (p_ < line_end_ && is_blank(*p_)) ++p_;
    if (p_ < line_end_) {
      line_start_ = start;
      return true;
    }
    p_ = line_end_;
  }
  return false;
}

bool TextLines::next_value(std::string_view* token) {
  while (p_ < line_end_ && is_blank(*p_)) ++p_;
  if (p_ == line_end_) return false;
  const char* start = p_;
  while (p_ < line_end_ && !is_blank(*p_)) ++p_;
  *token = std::string_view(start, static_cast<std::size_t>(p_ - start));
  return true;
}

bool TextLines::line_done() {
  while (p_ < line_end_ && is_blank(*p_)) ++p_;
  return p_ == line_end_;
}

std::size_t TextLines::line_number() const {
  const char* at = line_start_ ? line_start_ : p_;
  return 1 + static_cast<std::size_t>(std::count(file_, at, '\n'));
}

bool parse_scalar(std::string_view token, ScalarType type, std::uint8_t* out) {
  switch (type) {
    case ScalarType::kInt8:
      return parse_integer<std::int8_t>(token, out);
    case ScalarType::kUint8:
      return parse_integer<std::uint8_t>(token, out);
    case ScalarType::kInt16:
      return parse_integer<std::int16_t>(token, out);
    case ScalarType::kUint16:
      return parse_integer<std::uint16_t>(token, out);
    case ScalarType::kInt32:
      return parse_integer<std::int32_t>(token, out);
    case ScalarType::kUint32:
      return parse_integer<std::uint32_t>(token, out);
    case ScalarType::kFloat32:
      return parse_floating<float>(token, out);
    case ScalarType::kFloat64:
      return parse_floating<double>(token, out);
  }
  return false;
}

void append_scalar_text(ScalarType type, const std::uint8_t* value, std::string* out) {
  switch (type) {
    case ScalarType::kInt8:
      return append_text<std::int8_t>(value, out);
    case ScalarType::kUint8:
      return append_text<std::uint8_t>(value, out);
    case ScalarType::kInt16:
      return append_text<std::int16_t>(value, out);
    case ScalarType::kUint16:
      return append_text<std::uint16_t>(value, out);
    case ScalarType::kInt32:
      return append_text<std::int32_t>(value, out);
    case ScalarType::kUint32:
      return append_text<std::uint32_t>(value, out);
    case ScalarType::kFloat32:
      return append_text<float>(value, out);
    case ScalarType::kFloat64:
      return append_text<double>(value, out);
  }
}

double scalar_to_double(ScalarType type, const std::uint8_t* value) {
  AttributeColumn one;
  one.type = type;
  one.bytes.assign(value, value + scalar_size(type));
  return one.value(0);
}

PointCloud cloud_from_columns(std::vector<AttributeColumn> columns, std::size_t count, const std::string& source,
                              std::vector<float> xyz) {
  const AttributeColumn* axes[3] = {nullptr, nullptr, nullptr};
  for (const auto& c : columns)
    for (int a = 0; a < 3; ++a)
      if (!c.is_list && c.components == 1 && c.name == std::string(1, static_cast<char>('x' + a)) && !axes[a])
        axes[a] = &c;
  if (!axes[0] || !axes[1] || !axes[2]) throw DataError(source + ": no x, y, z point properties");
  PointCloud cloud;
  cloud.meta.source = source;
  const bool gathered = !xyz.empty();  // the reader filled the positions from float32 x, y, z already
  cloud.xyz = std::move(xyz);
  cloud.xyz.resize(3 * count);
  for (int a = 0; a < 3 && !gathered; ++a) {
    const AttributeColumn& c = *axes[a];
    if (c.type == ScalarType::kFloat32) {
      const float* v = c.values<float>();
      for (std::size_t i = 0; i < count; ++i) cloud.xyz[3 * i + a] = v[i];
    } else {
      for (std::size_t i = 0; i < count; ++i) cloud.xyz[3 * i + a] = static_cast<float>(c.value(i));
    }
  }
  for (auto& c : columns) {
    cloud.meta.property_order.push_back(c.name);
    const bool float_axis = (&c == axes[0] || &c == axes[1] || &c == axes[2]) && c.type == ScalarType::kFloat32;
    if (!float_axis) cloud.attributes.push_back(std::move(c));
  }
  return cloud;
}

ColumnsToWrite columns_for_writing(const PointCloud& cloud, const std::string& path) {
  ColumnsToWrite out;
  out.owned.reserve(3);
  const std::size_t n = cloud.size();
  const AttributeColumn* axis_columns[3] = {nullptr, nullptr, nullptr};
  for (int a = 0; a < 3; ++a) {
    const std::string name(1, static_cast<char>('x' + a));
    const AttributeColumn* original = cloud.find(name);
    bool still_valid = original && !original->is_list && original->components == 1 &&
                       original->bytes.size() == n * scalar_size(original->type);
    for (std::size_t i = 0; still_valid && i < n; ++i) {
      const float now = cloud.xyz[3 * i + a];
      const float then = static_cast<float>(original->value(i));
      still_valid = now == then || (std::isnan(now) && std::isnan(then));
    }
    if (still_valid) {
      axis_columns[a] = original;
      continue;
    }
    AttributeColumn c;
    c.name = name;
    c.type = ScalarType::kFloat32;
    c.bytes.resize(n * 4);
    float* v = c.values<float>();
    for (std::size_t i = 0; i < n; ++i) v[i] = cloud.xyz[3 * i + a];
    out.owned.push_back(std::move(c));
    axis_columns[a] = &out.owned.back();
  }
  std::vector<bool> used(cloud.attributes.size(), false);
  for (std::size_t k = 0; k < cloud.attributes.size(); ++k)
    if (is_position(cloud.attributes[k].name)) used[k] = true;  // written through axis_columns, or stale
  // Each name's column indices, the first last (popped from the back).
  std::unordered_map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t k = cloud.attributes.size(); k-- > 0;)
    if (!used[k]) by_name[cloud.attributes[k].name].push_back(k);
  bool axis_written[3] = {false, false, false};
  auto take = [&](const std::string& name) {
    if (is_position(name)) {
      const int a = name[0] - 'x';
      if (!axis_written[a]) out.columns.push_back(axis_columns[a]);
      axis_written[a] = true;
      return;
    }
    // The first unused column of that name, through an index: a cloud may have 65536 columns.
    const auto found = by_name.find(name);
    if (found == by_name.end()) return;
    std::vector<std::size_t>& candidates = found->second;
    while (!candidates.empty() && used[candidates.back()]) candidates.pop_back();
    if (candidates.empty()) return;
    used[candidates.back()] = true;
    out.columns.push_back(&cloud.attributes[candidates.back()]);
    candidates.pop_back();
  };
  for (const auto& name : cloud.meta.property_order) take(name);
  // A cloud made in memory (or whose order misses some columns): positions first, then the rest in order.
  std::vector<const AttributeColumn*> missing_axes;
  for (int a = 0; a < 3; ++a)
    if (!axis_written[a]) missing_axes.push_back(axis_columns[a]);
  out.columns.insert(out.columns.begin(), missing_axes.begin(), missing_axes.end());
  for (std::size_t k = 0; k < cloud.attributes.size(); ++k)
    if (!used[k]) out.columns.push_back(&cloud.attributes[k]);
  // Each component is a PLY property or .npy column of its own.
  std::size_t written = 0;
  for (const AttributeColumn* c : out.columns) written += static_cast<std::size_t>(c->components);
  if (written > kMaxCloudColumns)
    throw InvalidArgument(path + ": " + std::to_string(written) +
                          " columns (x, y, z and the attributes' components), " + "more than the " +
                          std::to_string(kMaxCloudColumns) + " a cloud file may have");
  return out;
}

void require_no_lists(const PointCloud& cloud, const std::string& path, const char* format) {
  for (const auto& a : cloud.attributes)
    if (a.is_list)
      throw InvalidArgument(path + ": " + format + " cannot hold list attribute " + detail::quoted(a.name));
}

}  // namespace s3d::io::detail
