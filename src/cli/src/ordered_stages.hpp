#pragma once
// The frame's item scheduler: items go through load (workers) -> handle (the calling thread, in input
// order) -> finish (workers) -> emit (the calling thread, in input order), with at most `window` items
// between the start of their load and their emit, so memory stays bounded however long the batch is.
//
//   item k:   load on a worker as soon as k - (oldest item not yet emitted) < window
//             handle on this thread once k's load is done and k-1 was handled
//             finish on a worker right after its handle
//             emit on this thread once k's finish is done and k-1 was emitted
//
// The callbacks keep each item's state themselves (indexed by k) and must not throw, except `emit`,
// whose exception ends the run (after every queued task has finished) and propagates.
#include <cstddef>
#include <functional>

#include "worker_pool.hpp"

namespace s3d::cli::detail {

struct OrderedStageCallbacks {
  std::function<void(std::size_t k)> load;
  /// `next_loaded`: item k+1's load is done already (a handler may start on it early). Returns false to
  /// handle no item after k (k itself is still finished and emitted).
  std::function<bool(std::size_t k, bool next_loaded)> handle;
  std::function<void(std::size_t k)> finish;
  std::function<void(std::size_t k)> emit;
  /// Polled on this thread before each handle: true = handle no more items (a signal).
  std::function<bool()> stop_requested;
};

/// Runs items 0..count-1 (see the file comment); `window` >= 1. Items loaded but never handled (after a
/// stop) are neither finished nor emitted. Returns the number of items handled.
std::size_t run_ordered_stages(std::size_t count, std::size_t window, WorkerPool& pool,
                               const OrderedStageCallbacks& callbacks);

}  // namespace s3d::cli::detail
