#pragma once
// Pieces every point-cloud reader and writer shares: whole-file reads with size checks, byte swapping,
// locale-free text numbers that round-trip exactly, and the mapping between a file's per-point columns
// and PointCloud (positions out of x/y/z, the rest as attributes, in file order).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quoted.hpp"
#include "s3d/core/point_cloud.hpp"

namespace s3d::io::detail {

/// The whole file. @throws IoError "path: cannot open" / "read failed".
std::string read_file_bytes(const std::string& path);

/// The whole file, read-only: a regular file is mapped (no copy, no zero-filled buffer: reading a large
/// binary cloud then costs about what `cat` does), anything else is read into memory.
class FileBytes {
 public:
  /// @throws IoError as read_file_bytes.
  explicit FileBytes(const std::string& path);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  std::string_view view() const { return {data_, size_}; }

 private:
  std::string copy_;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  void* map_ = nullptr;
};
/// Asks the kernel to back the whole 2 MiB pages inside [data, data + bytes) with huge pages when they are
/// first touched: a reader's freshly allocated output then takes a few page faults instead of one per
/// 4 KiB (those faults, each zeroing its page, cost more than decoding a large binary cloud). A hint
/// only: nothing happens for small ranges, where transparent huge pages are off, or off Linux.
void advise_huge_pages(void* data, std::size_t bytes);

/// Grows `v`'s capacity to at least `n` with advise_huge_pages on the new storage, before anything
/// touches it (elements already there are moved as by reserve).
template <typename T>
void reserve_huge(std::vector<T>* v, std::size_t n) {
  if (v->capacity() >= n) return;
  v->reserve(n);
  advise_huge_pages(v->data(), n * sizeof(T));
}

/// Writes `bytes` to exactly `path`. @throws IoError
void write_file_bytes(const std::string& path, const std::string& bytes);

/// Reverses the `n` bytes at `p` in place.
inline void reverse_bytes(std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n / 2; ++i) {
    const std::uint8_t t = p[i];
    p[i] = p[n - 1 - i];
    p[n - 1 - i] = t;
  }
}

/// The most columns (PLY properties of an element, PCD fields, .npy columns) a cloud file may have, read or
/// written: far beyond what real files use, and a bound on the work a hostile header can ask for.
constexpr std::size_t kMaxCloudColumns = std::size_t{1} << 16;

/// Whitespace-separated tokens of text data.
struct TextCursor {
  const char* p = nullptr;
  const char* end = nullptr;
  /// The next token, or false at the end of the text.
  bool next(std::string_view* token);
  std::size_t remaining() const { return static_cast<std::size_t>(end - p); }
};

/// Text data of one record per line (the ascii bodies of PLY and PCD): blank lines are skipped, and a
/// record's values are read from its own line only, so a line with a value too many or too few is found
/// where it is instead of shifting every later record.
class TextLines {
 public:
  /// `file` is the whole file (for line numbers); the records are [data, end).
  TextLines(const char* file, const char* data, const char* end) : file_(file), p_(data), line_end_(data), end_(end) {}
  /// Moves to the next non-blank line; false at the end of the text.
  bool next_line();
  /// The current line's next value, or false at its end.
  bool next_value(std::string_view* token);
  /// Whether the current line has no value left.
  bool line_done();
  /// Bytes left from the current position to the end of the text (a bound on the values that follow).
  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }
  /// The 1-based number of the current line in the file (counted when asked: for messages).
  std::size_t line_number() const;

 private:
  const char* file_;
  const char* p_;
  const char* line_end_;
  const char* end_;
  const char* line_start_ = nullptr;
};

/// Parses `token` as a value of `type` into `out` (host order). Integers must fit the type (an integral
/// float such as `3.0` is accepted); floats accept nan/inf. False when it does not parse or fit.
bool parse_scalar(std::string_view token, ScalarType type, std::uint8_t* out);
/// Appends the shortest text that parses back to the same value (std::to_chars).
void append_scalar_text(ScalarType type, const std::uint8_t* value, std::string* out);
/// Converts the value at `value` to double.
double scalar_to_double(ScalarType type, const std::uint8_t* value);

/// A PointCloud from a file's point columns (each holding `count` items): float32 x/y/z become the
/// positions; other-typed x/y/z are converted and also kept as attributes; the rest become attributes.
/// property_order records every column's name. @throws DataError "source: no x, y, z ..."
PointCloud cloud_from_columns(std::vector<AttributeColumn> columns, std::size_t count, const std::string& source,
                              std::vector<float> xyz = {});

/// The point columns a writer emits, in meta.property_order (then any others). Positions are written from
/// an original non-float32 x/y/z column when every position still equals its float conversion, else as
/// float32 columns made here (held in `owned`).
struct ColumnsToWrite {
  std::vector<AttributeColumn> owned;
  std::vector<const AttributeColumn*> columns;
};
/// @throws InvalidArgument "`path`: ... columns" when the cloud has more than kMaxCloudColumns.
ColumnsToWrite columns_for_writing(const PointCloud& cloud, const std::string& path);

/// Throws InvalidArgument "`path`: FORMAT cannot hold list attribute NAME" when the cloud has one.
void require_no_lists(const PointCloud& cloud, const std::string& path, const char* format);

}  // namespace s3d::io::detail
