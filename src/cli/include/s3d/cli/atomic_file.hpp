#pragma once
// Atomic output files: write to a temporary file in the target folder, then rename onto the target,
// so a reader (or a resumed batch) sees a file complete or absent, never partial.
#include <functional>
#include <string>

namespace s3d::cli {

/// A unique temporary path next to `target` (same folder, so the final rename is atomic):
/// `.NAME.s3d-tmp.HOST.PID.N.EXT`. Hidden (leading `.`), it names its host and process so that a later run
/// can tell a stale one (remove_stale_temps), and keeps `target`'s extension last so that writers choosing
/// the format by extension (OpenCV, PCL) still do. Thread-safe.
std::string temp_path_for(const std::string& target);

/// Removes, once per folder per process, the temp files and folders (temp_path_for names) in `folder` that
/// a process of this host which is no longer alive left behind (`kill -9`, a power cut). Temps of live
/// processes, and of other hosts (a shared file system), are kept. Never throws.
void remove_stale_temps(const std::string& folder);

/// `path` with its symbolic links followed (also a dangling one: the path it points to); `path` itself
/// when it is not a link. @throws IoError for a loop of links.
std::string resolve_links(const std::string& path);

/// True for a character device or a FIFO (`/dev/null`, `mkfifo`): an output there is written through, never
/// replaced by a rename.
bool is_write_through(const std::string& path);

/// Throws IoError naming `target` when it can never be written, found before any work: the nearest folder
/// of its path that exists is not a folder (`-o some_file/x.ply`) or cannot be written into (errno's text),
/// or it is a character device or FIFO without write permission. Missing folders are fine (created when
/// the output is written); a full disk is found only by the write.
void check_output_location(const std::string& target);

/// Copies the complete file `tmp` into the character device or FIFO `target` (opened for writing, not
/// created or truncated). @throws IoError naming `target`.
void write_through(const std::string& tmp, const std::string& target);

/// Moves the complete file `tmp` onto `target` in one step. With `replace` false an existing `target` is
/// never replaced, even by a writer racing this one: the move fails instead (RENAME_NOREPLACE where the
/// file system has it, else a check just before a plain rename).
/// @throws IoError naming `target` (with "exists" when `replace` is false and it does); `tmp` is left in
///         place for the caller to remove.
void commit_file(const std::string& tmp, const std::string& target, bool replace);

/// Calls `write(tmp)`, then moves tmp onto `target` (replacing it). On any exception the temp file is
/// removed and the exception propagates; `target` is untouched. @throws IoError when the rename fails.
void write_atomically(const std::string& target, const std::function<void(const std::string& tmp)>& write);

}  // namespace s3d::cli
