#pragma once
// Internal: a barrier for the threads of one OpenMP team that meet after every one of thousands of short
// steps (FPS: one meeting per sample). OpenMP's own barrier spins for a long while (GOMP_SPINCOUNT) before it
// sleeps; on a machine whose cores other processes want too, the waiting thread burns the time slice that the
// thread it waits for needs, and a step can cost a whole slice. This one spins briefly, then gives its core
// away (docs/PERFORMANCE.md, "CPU FPS on a shared machine").
#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace s3d::points::detail {

class StepBarrier {
 public:
  /// Set before the team's first arrive_and_wait (from a single thread, with OpenMP's barrier after it).
  void reset(int threads) {
    threads_ = threads;
    arrived_.store(0, std::memory_order_relaxed);
  }

  /// Returns once all `threads` have arrived; what each wrote before arriving is then visible to all.
  void arrive_and_wait() {
    // The phase cannot move before this thread arrives, so this is the phase of the current meeting.
    const unsigned phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      return;
    }
    for (int spin = 0; phase_.load(std::memory_order_acquire) == phase; ++spin) {
      if (spin < kSpins) {
        pause();
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  // About 10-40 µs of pause instructions: longer than a step's imbalance on an idle machine.
  static constexpr int kSpins = 1 << 11;
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  int threads_ = 1;
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> phase_{0};
};

}  // namespace s3d::points::detail
