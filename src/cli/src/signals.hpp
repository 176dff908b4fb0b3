#pragma once
// SIGINT/SIGTERM/SIGPIPE handling for the frame. The handler only records the signal; the main loop polls
// it between items, drops or finishes the current one, removes temp files and exits 130/143. A second
// signal, or a first one while the process waits on input (BlockingWait), exits at once with 130/143, after
// unlinking the registered temp files (async-signal-safe: unlink, rmdir, _exit).
#include <string>

namespace s3d::cli::detail {

/// Installs the handlers (idempotent): SIGINT/SIGTERM record the signal, SIGPIPE is ignored so a closed
/// stdout shows up as EPIPE on write (see write_stdout).
void install_signal_handlers();

/// 0, or the first SIGINT/SIGTERM received.
int pending_signal();

/// Temp files the second-signal path removes. Registration copies the path into a fixed slot table
/// (no allocation in the handler); paths that do not fit are still removed by the main loop.
void register_temp(const std::string& path);
void unregister_temp(const std::string& path);

/// Marks, for its lifetime, a wait that may block forever (a read of a pipe or FIFO, the open of a FIFO
/// output): a read restarted after the signal (SA_RESTART) never returns to the loop that polls the flag, so
/// a signal during such a wait exits at once. Also exits at construction when a signal came before it.
class BlockingWait {
 public:
  BlockingWait();
  ~BlockingWait();
  BlockingWait(const BlockingWait&) = delete;
  BlockingWait& operator=(const BlockingWait&) = delete;
};

/// True when `path` is something a read may block on forever: `-` (stdin), a FIFO, a character device.
bool may_block(const std::string& path);

/// Thrown (not derived from std::exception, so tool code catching std::exception lets it through) when
/// stdout's reader went away: the frame stops quietly with exit 0.
struct BrokenPipe {};

/// Writes all of `data` to file descriptor 1. @throws BrokenPipe on EPIPE, IoError on other errors.
void write_stdout(const char* data, std::size_t size);

}  // namespace s3d::cli::detail
