#pragma once
// sgm-depth's handle stage: matches the batch's pairs in input order on stereo::SgmPipelines, one per device,
// and queues the pairs after the current one before waiting for it: on a GPU their uploads overlap this pair's
// compute and the host's work on this pair's outputs, and with several GPUs (--device cuda:all) consecutive
// pairs go to different GPUs, all of them computing at once.
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memory_budget.hpp"
#include "pair_input.hpp"
#include "s3d/core/device.hpp"
#include "s3d/io/image.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_pipeline.hpp"

namespace s3d::sgm_depth {

/// The matcher's result for one pair.
struct Match {
  io::ImageF disparity;           ///< kInvalidDisparity (inf) where invalid
  std::vector<float> confidence;  ///< width*height when the params ask for it, else empty
};

/// Loaded pairs after the one being matched, in input order: (item index, pair).
using PairsAhead = std::vector<std::pair<std::size_t, const LoadedPair*>>;

class PairMatcher {
 public:
  /// One pipeline per device (GPUs; or the CPU alone). `max_memory` (bytes, 0 = none) holds each device: the
  /// pipelines for a new image size are built only when they can fit.
  PairMatcher(const std::vector<Device>& devices, const stereo::SgmParams& params, std::size_t max_memory);

  /// Matches item `index`'s pair. Pairs of `ahead` of the same size are queued first while the pipelines have
  /// room, each on the device with the fewest pairs in flight; the next calls must then be for those items in
  /// order, else the queued pairs are discarded. The pipelines are rebuilt when the size changes. Times
  /// "upload" (the host side of queuing) and "compute_download" (waiting for the result) into `ctx`.
  /// @throws DataError naming `name` when the parameters do not fit this size, or matching it can never fit
  ///         in memory (MemoryBudget); CudaError, OutOfMemory.
  Match match(std::size_t index, const LoadedPair& pair, const PairsAhead& ahead, const std::string& name,
              cli::ItemContext& ctx);

 private:
  struct Lane {
    Device device;
    MemoryBudget budget;
    std::unique_ptr<stereo::SgmPipeline> pipeline;  // built per image size, reused across the batch
  };
  struct Queued {
    std::size_t index;  // the item's
    std::size_t lane;
  };
  void build(int width, int height, const std::string& name);
  bool submit(const LoadedPair& p, std::size_t index);
  void discard();

  stereo::SgmParams params_;
  std::vector<Lane> lanes_;
  std::deque<Queued> queued_;  // pairs in flight, oldest first
};

}  // namespace s3d::sgm_depth
