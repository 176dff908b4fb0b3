#pragma once
// The stderr side of the frame: a progress bar (only on a terminal) and the spdlog logger that shares
// the line with it (a log line first erases the bar, the bar is redrawn on the next update).
#include <spdlog/logger.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace s3d::cli::detail {

class Progress {
 public:
  /// `enabled` = --progress always, or auto with stderr a terminal and not -q.
  Progress(bool enabled, std::size_t total);
  /// Redraws the bar (at most ~10 times a second) after `done` items, the last being `name`.
  void update(std::size_t done, const std::string& name);
  /// Erases the bar so a message can be printed on a clean line.
  void clear();
  /// Erases the bar for good.
  void finish();
  bool enabled() const { return enabled_; }

 private:
  void draw_locked(std::size_t done, const std::string& name);

  bool enabled_;
  bool shown_ = false;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
};

/// A logger named `tool` writing `tool: level: message` to stderr; colours only when `color`.
/// Every write first calls progress->clear() (progress may be null).
std::shared_ptr<spdlog::logger> make_stderr_logger(const std::string& tool, bool color, Progress* progress);

/// True when stderr is a terminal and NO_COLOR is unset or empty (https://no-color.org).
bool stderr_wants_color();
bool stderr_is_terminal();

}  // namespace s3d::cli::detail
