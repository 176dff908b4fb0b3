// The ordered stages (s3d/core/ordered_stages.hpp), the one way work overlaps across items: order, the bounded
// window, stops, an emit that throws, and the loads waited for ahead of a group.
#include "s3d/core/ordered_stages.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "concurrency_support.hpp"
#include "s3d/core/worker_pool.hpp"

namespace s3d {
namespace {

using test::InFlight;
using test::sleep_random_us;

TEST(OrderedStages, HandlesAndEmitsInOrderWithABoundedWindow) {
  const std::size_t n = 60, window = 5;
  WorkerPool pool(4);
  const auto caller = std::this_thread::get_id();
  InFlight flight;
  std::mutex mutex;
  std::vector<std::size_t> handled, emitted;
  std::atomic<int> off_thread_loads{0}, loads{0}, finishes{0};
  OrderedStageCallbacks cb;
  cb.load = [&](std::size_t) {
    flight.enter();
    ++loads;
    off_thread_loads += std::this_thread::get_id() != caller;
    sleep_random_us(2000);
  };
  cb.handle = [&](std::size_t k, std::size_t) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    handled.push_back(k);
    sleep_random_us(300);
    return true;
  };
  cb.finish = [&](std::size_t) {
    ++finishes;
    sleep_random_us(3000);
  };
  cb.emit = [&](std::size_t k) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    std::lock_guard<std::mutex> lock(mutex);
    emitted.push_back(k);
    flight.leave();
  };
  cb.stop_requested = [] { return false; };
  EXPECT_EQ(run_ordered_stages(n, window, pool, cb), n);
  std::vector<std::size_t> expected(n);
  for (std::size_t k = 0; k < n; ++k) expected[k] = k;
  EXPECT_EQ(handled, expected);
  EXPECT_EQ(emitted, expected);
  EXPECT_EQ(loads.load(), static_cast<int>(n));
  EXPECT_EQ(finishes.load(), static_cast<int>(n));
  EXPECT_EQ(off_thread_loads.load(), static_cast<int>(n));
  EXPECT_LE(flight.most.load(), static_cast<int>(window));
  EXPECT_GT(flight.most.load(), 1);  // the window is used: loads run ahead of the handler
}

TEST(OrderedStages, AStopEmitsExactlyTheHandledItems) {
  WorkerPool pool(3);
  std::vector<std::size_t> emitted;
  std::atomic<int> running{0};
  OrderedStageCallbacks cb;
  cb.load = [&](std::size_t) {
    ++running;
    sleep_random_us(500);
    --running;
  };
  cb.handle = [&](std::size_t k, std::size_t) { return k != 6; };
  cb.finish = [&](std::size_t) { sleep_random_us(500); };
  cb.emit = [&](std::size_t k) { emitted.push_back(k); };
  cb.stop_requested = [] { return false; };
  EXPECT_EQ(run_ordered_stages(30, 8, pool, cb), 7u);
  EXPECT_EQ(emitted, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(running.load(), 0);  // loads started ahead were waited for
}

TEST(OrderedStages, AnEmitThatThrowsEndsTheRunAfterEveryTask) {
  WorkerPool pool(4);
  std::atomic<int> running{0};
  OrderedStageCallbacks cb;
  auto busy = [&](std::size_t) {
    ++running;
    sleep_random_us(1000);
    --running;
  };
  cb.load = busy;
  cb.finish = busy;
  cb.handle = [](std::size_t, std::size_t) { return true; };
  cb.emit = [](std::size_t k) {
    if (k == 3) throw std::runtime_error("reader went away");
  };
  cb.stop_requested = [] { return false; };
  EXPECT_THROW(run_ordered_stages(50, 6, pool, cb), std::runtime_error);
  EXPECT_EQ(running.load(), 0);
}

// A handler that groups items (pc-sample --batch) sees the loads of the next `wait_ahead` items done,
// however slowly they load, except where the batch ends; loads of items after k are never waited for
// beyond that.
TEST(OrderedStages, WaitAheadHandsTheHandlerTheNextLoadedItems) {
  const std::size_t n = 23, ahead = 3;
  WorkerPool pool(2);
  std::vector<std::atomic<bool>> loaded(n);
  std::vector<std::size_t> seen;
  OrderedStageCallbacks cb;
  cb.load = [&](std::size_t k) {
    sleep_random_us(1500);
    loaded[k] = true;
  };
  cb.handle = [&](std::size_t k, std::size_t loaded_ahead) {
    for (std::size_t j = k + 1; j <= k + loaded_ahead; ++j) EXPECT_TRUE(loaded[j].load()) << k << " " << j;
    seen.push_back(loaded_ahead);
    return true;
  };
  cb.finish = [](std::size_t) {};
  cb.emit = [](std::size_t) {};
  cb.stop_requested = [] { return false; };
  EXPECT_EQ(run_ordered_stages(n, 1, pool, cb, ahead), n);
  ASSERT_EQ(seen.size(), n);
  for (std::size_t k = 0; k < n; ++k) EXPECT_GE(seen[k], std::min(ahead, n - 1 - k)) << "item " << k;
}

TEST(OrderedStages, WithoutAFinishAnItemLeavesTheWindowWhenHandled) {
  // Window 4, no finish: while item k is handled, the loads of k+1..k+3 have started (each handle waits for them,
  // in vain if a handled item still held its place).
  const std::size_t n = 20, window = 4;
  WorkerPool pool(3);
  std::atomic<std::size_t> started{0};
  std::vector<std::size_t> emitted, alone;
  OrderedStageCallbacks cb;
  cb.load = [&](std::size_t) { ++started; };
  cb.handle = [&](std::size_t k, std::size_t) {
    const std::size_t want = std::min(n, k + window);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < want && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (started.load() < want) alone.push_back(k);
    EXPECT_LE(started.load(), k + window) << "more than the window in flight at item " << k;
    return true;
  };
  cb.emit = [&](std::size_t k) { emitted.push_back(k); };
  cb.stop_requested = [] { return false; };
  EXPECT_EQ(run_ordered_stages(n, window, pool, cb), n);
  EXPECT_TRUE(alone.empty()) << "item " << alone.front() << " was handled without the next loads";
  std::vector<std::size_t> in_order(n);
  for (std::size_t k = 0; k < n; ++k) in_order[k] = k;
  EXPECT_EQ(emitted, in_order);
}

TEST(OrderedStages, ASlowLoadDoesNotHoldBackEmitsOrLaterLoads) {
  // Window 4: item 3's load takes long. Meanwhile items 0-2, handled and finished, are emitted and their places
  // go to the loads of 4-6, which run on the other workers while 3 still loads (the thread waiting for 3 used
  // to emit nothing, so the window stayed full and the workers idle).
  const std::size_t n = 8, window = 4;
  WorkerPool pool(3);
  std::atomic<bool> slow_done{false};
  std::vector<std::size_t> emitted_before_slow, loads_before_slow;
  std::mutex m;
  OrderedStageCallbacks cb;
  cb.load = [&](std::size_t k) {
    if (k == 3) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (;;) {  // until items 0-2 are out and a later load ran, or a generous deadline
        {
          std::lock_guard<std::mutex> lock(m);
          if (emitted_before_slow.size() == 3 && !loads_before_slow.empty()) break;
        }
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      slow_done = true;
    } else if (k > 3 && !slow_done) {
      std::lock_guard<std::mutex> lock(m);
      loads_before_slow.push_back(k);
    }
  };
  cb.handle = [&](std::size_t, std::size_t) { return true; };
  cb.finish = [&](std::size_t) {};
  cb.emit = [&](std::size_t k) {
    std::lock_guard<std::mutex> lock(m);
    if (!slow_done) emitted_before_slow.push_back(k);
  };
  cb.stop_requested = [] { return false; };
  EXPECT_EQ(run_ordered_stages(n, window, pool, cb), n);
  EXPECT_EQ(emitted_before_slow, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_FALSE(loads_before_slow.empty());
}

TEST(WorkerPool, FirstTasksRunBeforeTheOthersInTheirOwnOrder) {
  // One worker, held busy while the queue fills: a, b by submit; x, y, z by submit_first. The order run:
  // x, y, z (first in, first out among themselves), then a, b.
  WorkerPool pool(1);
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::mutex m;
  std::vector<char> order;
  auto task = [&](char c) {
    return [&, c] {
      std::lock_guard<std::mutex> lock(m);
      order.push_back(c);
    };
  };
  std::future<void> blocker = pool.submit([go] { go.wait(); });
  std::vector<std::future<void>> done;
  done.push_back(pool.submit(task('a')));
  done.push_back(pool.submit_first(task('x')));
  done.push_back(pool.submit(task('b')));
  done.push_back(pool.submit_first(task('y')));
  done.push_back(pool.submit_first(task('z')));
  release.set_value();
  blocker.get();
  for (auto& f : done) f.get();
  EXPECT_EQ(order, (std::vector<char>{'x', 'y', 'z', 'a', 'b'}));
}

}  // namespace
}  // namespace s3d
