#include "signals.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "s3d/cli/tool.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::cli {
namespace detail {
namespace {

constexpr int kSlots = 256;
constexpr std::size_t kPathMax = 4096;

struct TempSlot {
  std::atomic<int> used{0};
  char path[kPathMax];
};

TempSlot g_temps[kSlots];
volatile sig_atomic_t g_signal = 0;
std::atomic<int> g_waits{0};  // BlockingWaits in progress (lock-free: read by the handler)
static_assert(std::atomic<int>::is_always_lock_free);

[[noreturn]] void exit_now(int sig) {
  // Files first, then folders (a staged folder is registered after nothing inside it is left registered).
  for (auto& slot : g_temps)
    if (slot.used.load(std::memory_order_acquire) == 1) ::unlink(slot.path);
  for (auto& slot : g_temps)
    if (slot.used.load(std::memory_order_acquire) == 1) ::rmdir(slot.path);
  ::_exit(128 + sig);
}

extern "C" void on_signal(int sig) {
  // A second signal (the user insists), or a first one while a read may block forever: leave now.
  if (g_signal != 0 || g_waits.load() > 0) exit_now(g_signal != 0 ? g_signal : sig);
  g_signal = sig;
}

}  // namespace

void install_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: library code (OpenCV, PCL writers) must not see EINTR; the loop polls the flag instead.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction ign;
  std::memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, nullptr);
}

int pending_signal() { return g_signal; }

BlockingWait::BlockingWait() {
  g_waits.fetch_add(1);
  if (g_signal != 0) exit_now(g_signal);  // it came before the wait began: the flag alone would not be seen
}

BlockingWait::~BlockingWait() { g_waits.fetch_sub(1); }

bool may_block(const std::string& path) {
  if (path == "-") return true;
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode));
}

void register_temp(const std::string& path) {
  if (path.size() >= kPathMax) return;
  for (auto& slot : g_temps) {
    int expected = 0;
    // 2 = being written: the handler skips the slot until the path is complete.
    if (slot.used.compare_exchange_strong(expected, 2)) {
      std::memcpy(slot.path, path.c_str(), path.size() + 1);
      slot.used.store(1, std::memory_order_release);
      return;
    }
  }
}

void unregister_temp(const std::string& path) {
  for (auto& slot : g_temps) {
    if (slot.used.load(std::memory_order_acquire) == 1 && path == slot.path) {
      slot.used.store(0, std::memory_order_release);
      return;
    }
  }
}

void write_stdout(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(STDOUT_FILENO, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) throw BrokenPipe{};
      throw IoError(std::string("<stdout>: write failed: ") + std::strerror(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace detail

bool interrupt_requested() { return detail::pending_signal() != 0; }

}  // namespace s3d::cli
