#include "s3d/core/worker_pool.hpp"

#include <algorithm>

namespace s3d {

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

std::future<void> WorkerPool::submit(std::function<void()> task) { return queue(std::move(task), false); }

std::future<void> WorkerPool::submit_first(std::function<void()> task) { return queue(std::move(task), true); }

std::future<void> WorkerPool::queue(std::function<void()> task, bool first) {
  std::packaged_task<void()> packaged(std::move(task));
  std::future<void> done = packaged.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first)  // after the earlier first tasks: first in, first out among them
      queue_.insert(queue_.begin() + static_cast<std::ptrdiff_t>(first_count_++), std::move(packaged));
    else
      queue_.push_back(std::move(packaged));
  }
  wake_.notify_one();
  return done;
}

void WorkerPool::work() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
      if (first_count_ > 0) --first_count_;
    }
    task();
  }
}

}  // namespace s3d
