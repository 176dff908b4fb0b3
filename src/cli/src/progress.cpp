#include "progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <spdlog/sinks/base_sink.h>
#include <cstdio>
#include <cstdlib>

namespace s3d::cli::detail {

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

bool stderr_wants_color() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return stderr_is_terminal();
}

namespace {

int terminal_width() {
  struct winsize ws {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  return 80;
}

class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  StderrSink(bool color, Progress* progress) : color_(color), progress_(progress) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    if (progress_) progress_->clear();
    const char* on = "";
    if (color_ && msg.color_range_end > msg.color_range_start) {
      switch (msg.level) {
        case spdlog::level::err:
        case spdlog::level::critical:
          on = "\033[1;31m";
          break;
        case spdlog::level::warn:
          on = "\033[1;33m";
          break;
        case spdlog::level::info:
          on = "\033[32m";
          break;
        case spdlog::level::debug:
        case spdlog::level::trace:
          on = "\033[2m";
          break;
        default:
          break;
      }
    }
    if (*on) {
      std::fwrite(text.data(), 1, msg.color_range_start, stderr);
      std::fputs(on, stderr);
      std::fwrite(text.data() + msg.color_range_start, 1, msg.color_range_end - msg.color_range_start, stderr);
      std::fputs("\033[0m", stderr);
      std::fwrite(text.data() + msg.color_range_end, 1, text.size() - msg.color_range_end, stderr);
    } else {
      std::fwrite(text.data(), 1, text.size(), stderr);
    }
    std::fflush(stderr);
  }
  void flush_() override { std::fflush(stderr); }

 private:
  bool color_;
  Progress* progress_;
};

}  // namespace

std::shared_ptr<spdlog::logger> make_stderr_logger(const std::string& tool, bool color, Progress* progress) {
  auto sink = std::make_shared<StderrSink>(color, progress);
  auto logger = std::make_shared<spdlog::logger>(tool, sink);
  logger->set_pattern("%n: %^%l%$: %v");
  return logger;
}

Progress::Progress(bool enabled, std::size_t total)
    : enabled_(enabled), total_(total), start_(std::chrono::steady_clock::now()) {}

void Progress::update(std::size_t done, const std::string& name) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw_locked(done, name);
}

void Progress::draw_locked(std::size_t done, const std::string& name) {
  const int width = terminal_width();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  char counts[96];
  std::snprintf(counts, sizeof counts, " %zu/%zu %.1f/s ", done, total_, rate);
  const int bar = 24;
  const int filled = total_ ? static_cast<int>(bar * done / total_) : bar;
  std::string line = "\r[";
  line.append(static_cast<std::size_t>(filled), '#');
  line.append(static_cast<std::size_t>(bar - filled), ' ');
  line += "]";
  line += counts;
  const int room = width - static_cast<int>(line.size());
  if (room > 4)
    line += name.size() <= static_cast<std::size_t>(room - 1)
                ? name
                : "…" + name.substr(name.size() - static_cast<std::size_t>(room - 2));
  line += "\033[K";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::clear() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

void Progress::finish() { clear(); }

}  // namespace s3d::cli::detail
