#pragma once
// Small pieces every tool of apps/ needs the same way: a comma-separated flag value as a list, and a whole
// in-memory file written atomically through the frame.
#include <fstream>
#include <string>
#include <vector>

#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::apps {

/// `a, b,,c` -> {a, b, c}: items trimmed of blanks, empty ones skipped.
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

/// Writes `content` to `path` (`-` = stdout) atomically. @throws IoError naming `path`.
inline void write_file_atomically(cli::ItemContext& ctx, const std::string& path, const std::string& content) {
  ctx.write_atomically(path, [&](const std::string& tmp) {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw io_error_with_reason(path, "cannot create");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) throw io_error_with_reason(path, "write failed");
  });
}

}  // namespace s3d::apps
