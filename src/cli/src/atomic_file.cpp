#include "s3d/cli/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "s3d/core/errors.hpp"

namespace s3d::cli {

std::string temp_path_for(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path p(target);
  std::string name =
      "." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  // Keep the extension last: writers (OpenCV, PCL) pick the format from it.
  name += p.extension().string();
  return (p.parent_path() / name).string();
}

void commit_file(const std::string& tmp, const std::string& target, bool replace) {
  if (!replace) {
#ifdef RENAME_NOREPLACE
    // Writers of several items run at once: two of them naming the same output must not both "win".
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return;
    if (errno == EEXIST) throw IoError(target + ": exists (use --overwrite or --skip-existing)");
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      throw IoError(target + ": cannot write: " + std::strerror(errno));
#endif
    std::error_code ec;
    if (std::filesystem::exists(target, ec)) throw IoError(target + ": exists (use --overwrite or --skip-existing)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) throw IoError(target + ": cannot write: " + ec.message());
}

void write_atomically(const std::string& target, const std::function<void(const std::string& tmp)>& write) {
  const std::string tmp = temp_path_for(target);
  try {
    write(tmp);
    commit_file(tmp, target, true);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
}

}  // namespace s3d::cli
