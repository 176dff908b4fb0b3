#pragma once
// Helpers for tests of work spread over threads: a random short sleep that shuffles interleavings, and a count
// of items in flight with its peak.
#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

namespace s3d::test {

/// Sleeps 0..max_us microseconds, drawn from a per-thread generator.
inline void sleep_random_us(int max_us) {
  thread_local std::mt19937 rng(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, max_us)(rng)));
}

/// Items in flight (between enter and leave), and the most there were at once.
struct InFlight {
  std::atomic<int> now{0}, most{0};
  void enter() {
    const int n = ++now;
    int m = most.load();
    while (n > m && !most.compare_exchange_weak(m, n)) {
    }
  }
  void leave() { --now; }
};

}  // namespace s3d::test
