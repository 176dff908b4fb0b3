#pragma once
// Index lists as text: one decimal index per line, each line ending in '\n' (what the tools write for a list of
// rows when the output is not .npy; `numpy.loadtxt(path, dtype=int)` reads it).
#include <cstdint>
#include <string>
#include <vector>

namespace s3d::io {

/// The file's bytes for `indices`.
std::string index_list_text(const std::vector<std::int32_t>& indices);

}  // namespace s3d::io
