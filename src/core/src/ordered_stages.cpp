#include "s3d/core/ordered_stages.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <vector>

namespace s3d {
namespace {

bool ready(const std::future<void>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

}  // namespace

std::size_t run_ordered_stages(std::size_t count, std::size_t window, WorkerPool& pool, const OrderedStageCallbacks& cb,
                               std::size_t wait_ahead) {
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
        loaded[k].get();
        for (std::size_t j = k + 1; j < need; ++j) loaded[j].wait();
        std::size_t loaded_ahead = 0;
        while (k + 1 + loaded_ahead < launched && ready(loaded[k + 1 + loaded_ahead])) ++loaded_ahead;
        if (!cb.handle(k, loaded_ahead)) stopped = true;
        if (cb.finish) {
          finished[k] = pool.submit([&cb, k] { cb.finish(k); });
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
