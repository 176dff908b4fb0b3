// A strict reader of the part of OpenCV's FileStorage format that calibrations use: the top-level entries of
// a YAML (`%YAML:1.0`) or XML (`<opencv_storage>`) file that are numbers or `!!opencv-matrix` /
// `type_id="opencv-matrix"` maps. Files come from users and the internet, and OpenCV's own parser is not safe
// on hostile input (null dereferences and over-reads found by fuzzing, e.g. opencv/opencv#15127 and #28619),
// so it is not used for reading. Entries of other shapes are skipped; anything this reader does not
// understand is a DataError "PATH: line N: what".
#pragma once

#include <map>
#include <string>
#include <vector>

namespace s3d::io::opencv_storage {

/// One top-level entry: a number (rows = cols = 1, matrix = false) or a matrix of at most kMaxSide per side,
/// row-major. `line` is where the entry starts (1-based), for messages.
struct Entry {
  bool matrix = false;
  int rows = 0;
  int cols = 0;
  std::vector<double> values;
  int line = 0;
};

/// Matrices larger than this per side are not calibrations; refused before any allocation.
constexpr int kMaxSide = 16;

/// Whether `text` is in this format: a `%YAML` first line or an `<opencv_storage>` element.
bool looks_like(const std::string& text);

/// The numeric and matrix entries of `text` by name. `wanted` names the entries the caller reads: those must be
/// a finite number or a well-formed matrix (an error says which line is wrong); other entries may have any
/// shape and are skipped. `source` prefixes every error.
std::map<std::string, Entry> read(const std::string& text, const std::vector<std::string>& wanted,
                                  const std::string& source);

}  // namespace s3d::io::opencv_storage
