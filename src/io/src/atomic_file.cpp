#include "s3d/io/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "s3d/core/errors.hpp"

namespace s3d::io {

std::string temp_path_for(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path p(target);
  std::string name = "." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                     std::to_string(counter.fetch_add(1));
  // Keep the extension last: writers (OpenCV, PCL) pick the format from it.
  name += p.extension().string();
  return (p.parent_path() / name).string();
}

void write_atomically(const std::string& target, const std::function<void(const std::string& tmp)>& write) {
  const std::string tmp = temp_path_for(target);
  try {
    write(tmp);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError(target + ": cannot write: " + ec.message());
  }
}

}  // namespace s3d::io
