#include "s3d/core/ordered_stages.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <vector>

namespace s3d {
namespace {

bool ready(const std::future<void>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

// How often the thread waiting for a load looks for finished items to emit (and places to refill).
constexpr std::chrono::microseconds kPoll(200);

}  // namespace

std::size_t run_ordered_stages(std::size_t count, std::size_t window, WorkerPool& pool, const OrderedStageCallbacks& cb,
                               std::size_t wait_ahead, OrderedStageStats* stats) {
  window = std::max<std::size_t>({window, 1, 2 * wait_ahead + 1});
  std::vector<std::future<void>> loaded(count), finished(count);
  std::size_t launched = 0, handled = 0, emitted = 0;
  bool stopped = false;

  // Tasks refer to the callers' per-item state: none may outlive this call, even when emit throws.
  auto join_all = [&] {
    for (std::size_t k = 0; k < launched; ++k) {
      if (loaded[k].valid()) loaded[k].wait();
      if (finished[k].valid()) finished[k].wait();
    }
  };
  try {
    for (;;) {
      while (!stopped && launched < count && launched - emitted < window) {
        const std::size_t k = launched++;
        loaded[k] = pool.submit([&cb, k] { cb.load(k); });
      }
      if (!stopped && cb.stop_requested()) stopped = true;
      if (!stopped && handled < launched) {
        const std::size_t k = handled++;
        // The next wait_ahead items must be launched before they can be waited for: when the window is full of
        // items handled but not yet emitted, emit the oldest (its finish was submitted before k was handled).
        const std::size_t need = std::min(count, k + 1 + wait_ahead);
        while (launched < need) {
          if (launched - emitted < window) {
            const std::size_t j = launched++;
            loaded[j] = pool.submit([&cb, j] { cb.load(j); });
          } else {
            finished[emitted].get();
            cb.emit(emitted++);
          }
        }
        // While k (and the items waited for ahead) load, items already finished are emitted and their places in
        // the window go to new loads: a slow load must not leave the workers without work.
        const auto wait_start = std::chrono::steady_clock::now();
        for (std::size_t j = k; j < need; ++j) {
          while (loaded[j].wait_for(kPoll) != std::future_status::ready) {
            while (emitted < handled - 1 && ready(finished[emitted])) {  // k itself is not finished yet
              finished[emitted].get();
              cb.emit(emitted++);
            }
            while (!stopped && launched < count && launched - emitted < window) {
              const std::size_t i = launched++;
              loaded[i] = pool.submit([&cb, i] { cb.load(i); });
            }
          }
        }
        if (stats)
          stats->load_wait_seconds +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
        loaded[k].get();
        std::size_t loaded_ahead = 0;
        while (k + 1 + loaded_ahead < launched && ready(loaded[k + 1 + loaded_ahead])) ++loaded_ahead;
        if (!cb.handle(k, loaded_ahead)) stopped = true;
        if (cb.finish) {
          finished[k] = pool.submit_first([&cb, k] { cb.finish(k); });  // it frees a place in the window
        } else {  // nothing after the handle: emitted now (k - 1 was, in order), its place in the window freed
          if (cb.emit) cb.emit(k);
          emitted = handled;
        }
      } else if (emitted < handled) {
        finished[emitted].get();  // nothing to handle now: the oldest item's output is what we wait for
        cb.emit(emitted++);
      } else {
        break;  // everything handled was emitted, and nothing more will be handled
      }
      while (emitted < handled && ready(finished[emitted])) {
        finished[emitted].get();
        cb.emit(emitted++);
      }
    }
  } catch (...) {
    join_all();
    throw;
  }
  join_all();
  return handled;
}

}  // namespace s3d
