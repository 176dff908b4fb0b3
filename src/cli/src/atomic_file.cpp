#include "s3d/cli/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <system_error>

#include "s3d/core/errors.hpp"

namespace fs = std::filesystem;

namespace s3d::cli {
namespace {

constexpr const char* kTempMark = ".s3d-tmp.";

// The host name as one name component (no dots or slashes), so that the temp name parses back.
const std::string& host_tag() {
  static const std::string tag = [] {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return std::string("host");
    std::string h(buf);
    for (char& c : h)
      if (c == '.' || c == '/') c = '_';
    return h;
  }();
  return tag;
}

// A process whose id `kill(pid, 0)` cannot find. EPERM: alive, someone else's.
bool process_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

// The pid of a temp name of this host (`.NAME.s3d-tmp.HOST.PID.N[.EXT]`), else -1.
long stale_candidate_pid(const std::string& name) {
  const std::string mark = kTempMark + host_tag() + ".";
  const std::size_t at = name.rfind(mark);
  if (name.empty() || name[0] != '.' || at == std::string::npos) return -1;
  std::size_t pos = at + mark.size();
  std::size_t end = pos;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == pos || end >= name.size() || name[end] != '.') return -1;
  try {
    return std::stol(name.substr(pos, end - pos));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

std::string temp_path_for(const std::string& target) {
  static std::atomic<unsigned long> counter{std::random_device{}() & 0xffffu};
  fs::path p(target);
  std::string name = "." + p.filename().string() + kTempMark + host_tag() + "." + std::to_string(::getpid()) + "." +
                     std::to_string(counter.fetch_add(1));
  // Keep the extension last: writers (OpenCV, PCL) pick the format from it.
  name += p.extension().string();
  return (p.parent_path() / name).string();
}

void remove_stale_temps(const std::string& folder) {
  static std::mutex mutex;
  static std::set<std::string> scanned;
  const std::string key = folder.empty() ? "." : folder;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!scanned.insert(key).second) return;
  }
  std::error_code ec;
  for (fs::directory_iterator it(key, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (process_gone(stale_candidate_pid(name))) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

std::string resolve_links(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw IoError(path + ": cannot read the link: " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw IoError(path + ": too many levels of symbolic links");
}

bool is_write_through(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

void check_output_location(const std::string& target) {
  struct stat st;
  if (::stat(target.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    if (::access(target.c_str(), W_OK) != 0) throw IoError(target + ": cannot write: " + std::strerror(errno));
    return;
  }
  fs::path folder = fs::path(target).parent_path();
  if (folder.empty()) folder = ".";
  for (;;) {
    if (::stat(folder.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) throw IoError(target + ": " + folder.string() + " is not a folder");
      if (::access(folder.c_str(), W_OK | X_OK) != 0)
        throw IoError(target + ": cannot write into " + folder.string() + ": " + std::strerror(errno));
      return;
    }
    fs::path up = folder.parent_path();
    if (up.empty() && folder.is_relative() && folder != ".") up = ".";
    if (up.empty() || up == folder) return;  // nothing of the path exists: the write says why
    folder = up;
  }
}

void write_through(const std::string& tmp, const std::string& target) {
  std::ifstream in(tmp, std::ios::binary);
  if (!in) throw IoError(target + ": cannot reopen the finished output");
  const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(target + ": cannot open for writing: " + std::strerror(errno));
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const char* data = buf;
    std::size_t left = static_cast<std::size_t>(in.gcount());
    while (left > 0) {
      const ssize_t n = ::write(fd, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        throw IoError(target + ": write failed: " + std::strerror(err));
      }
      data += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (::close(fd) != 0) throw IoError(target + ": write failed: " + std::strerror(errno));
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
    if (fs::exists(fs::symlink_status(target, ec)))
      throw IoError(target + ": exists (use --overwrite or --skip-existing)");
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) throw IoError(target + ": cannot write: " + ec.message());
}

void write_atomically(const std::string& target, const std::function<void(const std::string& tmp)>& write) {
  const std::string tmp = temp_path_for(target);
  try {
    write(tmp);
    commit_file(tmp, target, true);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

}  // namespace s3d::cli
