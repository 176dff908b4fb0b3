#pragma once
// Object-detection box files: read a detector's output into a DetectionTable (boxes, scores, group keys)
// and write a subset of its records back in the same format, every original field kept verbatim.
//
// Formats (BoxFileFormat), chosen by extension, by content (`.txt`, stdin) or explicitly:
//   coco   COCO results JSON: a JSON array of objects {image_id, category_id, bbox [x,y,w,h], score, ...}
//   csv    CSV with a header row; box columns found by name (x1,y1,x2,y2 / x,y,w,h / cx,cy,w,h, ...)
//   jsonl  JSON Lines: one object per line, with `bbox` or named box keys like the CSV columns
//   mot    MOTChallenge det.txt: `frame,id,bb_left,bb_top,bb_width,bb_height,conf,x,y,z` (no header)
//   voc    per-image text files, lines `class score left top right bottom` (whitespace separated): a folder
//          of them (one file per image, the image is the file name without extension) or a single file
//
// Units: boxes are in the file's units (pixels for every format above); no coordinate is rescaled. Rotated
// boxes (`rotated`) are (cx, cy, w, h, angle), the angle passed through unchanged (its unit and direction
// are the NMS library's, see s3d/detection/nms.hpp and docs/NMS-FILTER.md).
//
// Errors: a file that cannot be read, or whose overall structure is broken (not a JSON array, no CSV
// header, no box columns), throws IoError or DataError naming the file. A single bad record (NaN or
// infinite coordinate or score, a value beyond float range, missing field, wrong type, wrong field count) throws
// DataError naming the file and the record (`dets.csv: line 17: score is NaN`); with `drop_invalid` such records are
// skipped and counted instead. Nothing here prints or logs.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace s3d::io {

/// The box file formats (see the file comment).
enum class BoxFileFormat { kCocoJson, kCsv, kJsonLines, kMot, kVoc };

/// `coco`, `csv`, `jsonl`, `mot`, `voc`.
std::string to_string(BoxFileFormat format);

/// Parses a format name: `coco` (also `json`), `csv`, `jsonl` (also `ndjson`), `mot`, `voc`.
/// @throws InvalidArgument for anything else (the message lists the names).
BoxFileFormat parse_box_file_format(std::string_view name);

/// The format implied by a path's extension alone: `.json` coco, `.csv` csv, `.jsonl`/`.ndjson` jsonl,
/// `.det` / `det.txt` mot; std::nullopt for `.txt` (MOT or VOC: see detect_box_file_format), folders,
/// `-` and unknown extensions.
std::optional<BoxFileFormat> box_file_format_from_extension(const std::string& path);

/// The format of an existing file or folder: a folder is `voc`; otherwise the extension decides, and where
/// it cannot (`.txt`, no extension, a stdin copy) the first non-blank line does: `[` coco, `{` jsonl,
/// commas and a non-numeric first field csv, commas and numbers mot, whitespace-separated fields voc.
/// @throws IoError when the path cannot be read or the content matches none of the formats.
BoxFileFormat detect_box_file_format(const std::string& path);

/// How the four numbers of an axis-aligned box are given.
enum class BoxEncoding {
  kAuto,    ///< the format's convention: coco/mot/jsonl `bbox` xywh, voc xyxy, csv/jsonl by column names
  kXyxy,    ///< x1, y1, x2, y2 (corners)
  kXywh,    ///< x, y (top-left), w, h
  kCxcywh,  ///< cx, cy (centre), w, h
};

/// `auto`, `xyxy`, `xywh`, `cxcywh`.
std::string to_string(BoxEncoding encoding);
/// Parses `auto|xyxy|xywh|cxcywh`. @throws InvalidArgument otherwise.
BoxEncoding parse_box_encoding(std::string_view name);

/// What to read and how.
struct BoxReadOptions {
  /// The format; std::nullopt = detect_box_file_format(path).
  std::optional<BoxFileFormat> format;
  /// How axis-aligned boxes are encoded (ignored when `rotated`, which is always cx, cy, w, h, angle).
  BoxEncoding encoding = BoxEncoding::kAuto;
  /// Names of the box columns/keys (csv, jsonl), 4 (or 5 when rotated) in encoding order; empty = the
  /// conventional names: xyxy x1,y1,x2,y2 | xmin,ymin,xmax,ymax | left,top,right,bottom; xywh x,y,w,h |
  /// x,y,width,height | left,top,width,height | bb_left,bb_top,bb_width,bb_height; cxcywh cx,cy,w,h |
  /// x_center,y_center,width,height | xc,yc,w,h; rotated cx,cy,w,h,angle (or theta, a). Matched without case.
  std::vector<std::string> box_fields;
  /// Name of the score column/key; empty = the first of score, conf, confidence, scores.
  std::string score_field;
  /// Rotated boxes: csv/jsonl columns cx,cy,w,h,angle, coco/jsonl `bbox` of 5 numbers. Not for mot/voc.
  bool rotated = false;
  /// Extra fields whose values are extracted per record as keys (e.g. --group-by fields). A named field
  /// missing from a csv header is a file error; missing from a JSON record, a record error.
  std::vector<std::string> key_fields;
  /// Skip bad records (counted in DetectionTable::dropped_invalid) instead of throwing.
  bool drop_invalid = false;
  /// Name used in messages instead of the path (e.g. `<stdin>`); empty = the path.
  std::string display_name;
};

/// The values of one key field over the records, dictionary-coded.
struct KeyColumn {
  std::string name;                 ///< the field name as found in the file
  std::vector<std::int32_t> codes;  ///< per record: index into `values`
  std::vector<std::string> values;  ///< distinct values in first-seen order, as text (JSON strings unquoted)
};

/// The original bytes of each record, kept so that writers reproduce every field and column verbatim.
/// Filled by the readers; meant for the writers (and tests), not for editing.
struct OriginalRecords {
  struct Span {
    std::size_t offset = 0;  ///< byte offset in `text`
    std::size_t size = 0;    ///< byte count
  };
  std::string text;                   ///< the input bytes (a voc folder: its files concatenated)
  std::vector<Span> record;           ///< per table row: the record (one line, or one JSON value), no newline
  std::vector<Span> score;            ///< per table row: the score token (text formats; empty for JSON)
  std::string header;                 ///< csv: the header line
  std::string score_field;            ///< the score column/key as spelled in the file (JSON rewrites it)
  std::vector<std::string> files;     ///< voc: file names (no folder), in read order
  std::vector<std::int32_t> file_of;  ///< voc: per table row, index into `files`
  bool folder = false;                ///< voc: read from a folder (written as a folder)
  std::string bom;                    ///< csv: the UTF-8 byte-order mark the file began with ("" = none)
  std::string newline = "\n";         ///< the first line's ending ("\r\n" for CRLF files): written back
};

/// Detections of one file: one row per valid record, in input order.
struct DetectionTable {
  BoxFileFormat format = BoxFileFormat::kCsv;
  std::string source;                         ///< name used in messages (path or display name)
  bool rotated = false;                       ///< rows hold (cx, cy, w, h, angle) instead of (x1, y1, x2, y2)
  BoxEncoding encoding = BoxEncoding::kXyxy;  ///< the encoding of `given` (resolved, never kAuto)

  std::vector<double> given;   ///< box_dim() numbers per row, as in the file
  std::vector<double> boxes;   ///< box_dim() numbers per row: x1,y1,x2,y2 (converted) or cx,cy,w,h,angle
  std::vector<double> scores;  ///< one per row, finite
  /// Per row: the record's 0-based position among all records of the input (dropped ones included), the
  /// number `--emit indices` prints: the element index of a JSON array, the data line of csv/jsonl/mot
  /// (header and blank lines not counted), the line over a voc folder's files in name order.
  std::vector<std::size_t> positions;

  std::vector<KeyColumn> keys;  ///< the requested key fields, then the image and class fields if found
  std::string image_field;      ///< the field naming the image/frame ("" = none): image_id, frame, ...
  std::string class_field;      ///< the field naming the class ("" = none): category_id, class, label, ...

  std::size_t records_in = 0;                ///< records seen, valid or not
  std::size_t dropped_invalid = 0;           ///< records skipped by drop_invalid
  std::vector<std::string> dropped_reasons;  ///< the first 20 messages of skipped records

  OriginalRecords original;

  std::size_t size() const { return scores.size(); }
  int box_dim() const { return rotated ? 5 : 4; }
  /// The key column named `name` (matched without case), or nullptr.
  const KeyColumn* key(std::string_view name) const;
  /// Dense group ids (0..G-1, in first-seen order) of the value tuples of `fields`; all zeros when
  /// `fields` is empty. `*group_count` (if given) receives G. @throws InvalidArgument for an unknown field.
  std::vector<std::int64_t> group_ids(const std::vector<std::string>& fields,
                                      std::int64_t* group_count = nullptr) const;
};

/// Reads a box file (or a voc folder). @throws IoError, DataError (see the file comment).
DetectionTable read_boxes(const std::string& path, const BoxReadOptions& options = {});

/// Reads box records from memory (`content` is taken). `format` must be known; a voc folder is not possible.
DetectionTable read_boxes_from_string(std::string content, BoxFileFormat format, const BoxReadOptions& options);

/// One output file of a writer: `name` is empty for single-file formats, a file name for a voc folder.
struct BoxOutputFile {
  std::string name;
  std::string content;
};

/// Renders `rows` (indices into `table`, in the order given) in the table's format: the original bytes of
/// each record, except that with `new_scores` (one per entry of `rows`) the score field is rewritten with
/// the shortest decimal that reads back as the same float (or double); a NaN entry keeps that record's
/// original score text. csv keeps its header, coco writes a
/// JSON array (one record per line), jsonl/mot/voc one record per line. A voc folder gives one file per
/// input file (empty when none of its records is written); everything else one file.
/// @throws InvalidArgument when a row is out of range or `new_scores` has the wrong length.
std::vector<BoxOutputFile> render_boxes(const DetectionTable& table, const std::vector<std::size_t>& rows,
                                        const std::vector<double>* new_scores = nullptr);

/// The records a filter kept, as render_boxes writes them in input order: `keep` (rows of `table`, in any
/// order) with their final scores `kept_scores` (one per entry); a score that differs from the row's own (as
/// float) is rewritten, an equal one keeps its original text. @throws InvalidArgument (a row out of range,
/// lengths that differ).
std::vector<BoxOutputFile> render_kept(const DetectionTable& table, const std::vector<std::int64_t>& keep,
                                       const std::vector<float>& kept_scores);

/// The input positions (DetectionTable::positions) of `rows`, in the order given, one decimal per line.
/// @throws InvalidArgument for a row out of range.
std::string render_positions(const DetectionTable& table, const std::vector<std::int64_t>& rows);

/// Writes render_boxes() of a single-file table to `out`. @throws InvalidArgument for a voc folder.
void write_boxes(std::ostream& out, const DetectionTable& table, const std::vector<std::size_t>& rows,
                 const std::vector<double>* new_scores = nullptr);

/// Formats a number the way the writers do: the shortest text that reads back as the same float when the
/// value is exactly a float, else as the same double.
std::string format_number(double value);

}  // namespace s3d::io
