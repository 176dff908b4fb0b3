#pragma once
// Shared by the box readers and writers (not installed).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "s3d/io/boxes.hpp"

namespace s3d::io::detail {

/// Parses a whole token as a decimal number (leading '+' and surrounding spaces allowed; `nan`/`inf`
/// parse, finiteness is the caller's check). False when the token is not entirely a number.
bool parse_number(std::string_view token, double* value);

std::string_view trim(std::string_view s);
std::string lower(std::string_view s);
bool iequals(std::string_view a, std::string_view b);

/// The conventional names of the image and class fields, in order of preference.
const std::vector<std::string>& image_field_names();
const std::vector<std::string>& class_field_names();
const std::vector<std::string>& score_field_names();

/// Picks the box fields among `available` (names as in the file): explicit options.box_fields, else the
/// conventional sets for the (possibly auto) encoding. Returns the names as spelled in `available` and
/// sets `*encoding` to the resolved encoding; empty when nothing matches.
std::vector<std::string> choose_box_fields(const std::vector<std::string>& available, const BoxReadOptions& options,
                                           BoxEncoding* encoding);
/// "" or a message when `available` has an angle column (angle, theta) but the boxes are read as axis-aligned
/// by auto-detected names: the user most likely forgot `rotated` (an explicit encoding silences this).
std::string forgotten_angle(const std::vector<std::string>& available, const BoxReadOptions& options);
/// Text listing what choose_box_fields looks for, for error messages.
std::string expected_box_fields(const BoxReadOptions& options);
/// The first of `candidates` present in `available` (without case), as spelled there; "" if none.
std::string find_field(const std::vector<std::string>& available, const std::vector<std::string>& candidates);

/// Builds a DetectionTable record by record: checks values, converts boxes, codes keys, and reports bad
/// records (throw DataError, or count them under drop_invalid).
class TableBuilder {
 public:
  TableBuilder(DetectionTable& table, const BoxReadOptions& options);

  /// Declares the key columns (call once, before the first row); names as in the file.
  void set_key_fields(const std::vector<std::string>& names);
  const std::vector<std::string>& key_fields() const { return key_names_; }
  /// Reserves room for about `rows` rows (an estimate from the line count).
  void reserve(std::size_t rows);

  /// A bad record at `where` (e.g. `line 17` or `record 5 (line 3)`): throws DataError
  /// `<source>: <where>: <what>`, or counts it when dropping.
  void bad_record(const std::string& where, const std::string& what);

  /// Checks the box numbers and the score for NaN/inf; returns "" or the message (naming the field).
  std::string check_finite(const double* given, const std::vector<std::string>& box_names, double score,
                           std::string_view score_name) const;

  /// Appends a valid row. `given` holds box_dim numbers; `keys` one value per key field.
  void add_row(const double* given, double score, std::size_t position, const std::vector<std::string_view>& keys,
               OriginalRecords::Span record, OriginalRecords::Span score_span);

  /// Counts one record seen (valid or not).
  void count_record() { ++table_.records_in; }

 private:
  DetectionTable& table_;
  const BoxReadOptions& options_;
  std::vector<std::string> key_names_;
  std::vector<std::unordered_map<std::string, std::int32_t>> key_maps_;
  std::string key_buffer_;
  std::size_t expected_rows_ = 0;
};

/// Readers per format; `table.original.text` holds the bytes, `table.source` the display name.
void read_csv(DetectionTable& table, const BoxReadOptions& options);
void read_mot(DetectionTable& table, const BoxReadOptions& options);
/// Declares the key columns of a voc table (requested fields, then `image` and `class`).
void voc_begin(DetectionTable& table, TableBuilder& builder, const BoxReadOptions& options);
/// Reads voc lines of `text[begin, end)` as file `file_index` (stem `image`); positions continue from
/// `*position`, line numbers are reported with `where_prefix` (a file name inside a folder, or "").
void read_voc_part(DetectionTable& table, TableBuilder& builder, const BoxReadOptions& options, std::size_t begin,
                   std::size_t end, std::int32_t file_index, const std::string& image, std::size_t* position,
                   const std::string& where_prefix);
void read_coco(DetectionTable& table, const BoxReadOptions& options);
void read_jsonl(DetectionTable& table, const BoxReadOptions& options);

/// Rewrites the score of a JSON record (`record` text) to `score`, keeping every other field.
std::string rewrite_json_score(std::string_view record, const std::string& score_field, double score);

}  // namespace s3d::io::detail
