#pragma once
// The one way work overlaps across items (the tools' frame over a batch, fusion::fuse_sequence over a
// sequence's frames): items go through load (workers) -> handle (the calling thread, in input
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

#include "s3d/core/worker_pool.hpp"

namespace s3d {

struct OrderedStageCallbacks {
  std::function<void(std::size_t k)> load;
  /// `loaded_ahead`: how many items after k (k+1, k+2, ...) have finished loading, consecutively (a handler
  /// may start on them early). Returns false to handle no item after k (k itself is still finished and
  /// emitted).
  std::function<bool(std::size_t k, std::size_t loaded_ahead)> handle;
  /// Optional. Without it an item has nothing after its handle: it is emitted (when `emit` is set) and leaves
  /// the window as soon as it is handled, so the loads of the next window - 1 items overlap the next handle.
  std::function<void(std::size_t k)> finish;
  std::function<void(std::size_t k)> emit;  ///< optional without `finish`
  /// Polled on this thread before each handle: true = handle no more items (a signal).
  std::function<bool()> stop_requested;
};

/// Where the calling thread's time went, for a run's summary.
struct OrderedStageStats {
  double load_wait_seconds = 0.0;  ///< waiting for loads before handles: the loads are the bound
};

/// Runs items 0..count-1 (see the file comment); `window` >= 1. Before handling item k it waits for the
/// loads of up to `wait_ahead` items after k that are already launched (for handlers that group items:
/// the window is raised to 2 * wait_ahead + 1 so that they can be); with 0 it waits for none. Items
/// loaded but never handled (after a stop) are neither finished nor emitted. Returns the number of items
/// handled.
std::size_t run_ordered_stages(std::size_t count, std::size_t window, WorkerPool& pool,
                               const OrderedStageCallbacks& callbacks, std::size_t wait_ahead = 0,
                               OrderedStageStats* stats = nullptr);

}  // namespace s3d
