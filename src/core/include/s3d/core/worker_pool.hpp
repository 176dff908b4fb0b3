#pragma once
// A fixed set of threads running queued tasks first in, first out: the tools' decode/encode workers, and a
// sequence's frame readers.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace s3d {

class WorkerPool {
 public:
  /// Starts `threads` (>= 1) threads.
  explicit WorkerPool(int threads);
  /// Runs the tasks still queued, then joins every thread.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `task`; the future is ready when it ran and carries what it threw.
  std::future<void> submit(std::function<void()> task);
  /// Queues `task` ahead of every task queued by submit, behind those queued by submit_first (work that frees
  /// resources the queued tasks wait for: the ordered stages' finishes, which let an item leave the window).
  std::future<void> submit_first(std::function<void()> task);
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  std::future<void> queue(std::function<void()> task, bool first);
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  std::size_t first_count_ = 0;  // tasks at the queue's front queued by submit_first
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace s3d
