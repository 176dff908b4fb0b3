#pragma once
// Atomic output files: write to a temporary file in the target folder, then rename onto the target,
// so a reader (or a resumed batch) sees a file complete or absent, never partial.
#include <functional>
#include <string>

namespace s3d::io {

/// A unique temporary path next to `target` (same folder, so the final rename is atomic).
std::string temp_path_for(const std::string& target);

/// Calls `write(tmp)`, then renames tmp onto `target`. On any exception the temp file is removed and the
/// exception propagates; `target` is untouched. @throws IoError when the rename fails.
void write_atomically(const std::string& target, const std::function<void(const std::string& tmp)>& write);

}  // namespace s3d::io
