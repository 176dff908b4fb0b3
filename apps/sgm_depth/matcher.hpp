#pragma once
// sgm-depth's handle stage: matches the batch's pairs in input order on one stereo::SgmPipeline, and queues
// the next item's pair before waiting for the current one, so that on a GPU its upload overlaps this
// pair's compute and the host's work on this pair's outputs.
#include <cstddef>
#include <deque>
#include <memory>
#include <string>

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

class PairMatcher {
 public:
  /// `budget`: the pipeline for a new image size is built only when it can fit.
  PairMatcher(const Device& device, const stereo::SgmParams& params, MemoryBudget budget);

  /// Matches item `index`'s pair. When `next` is given (the next item's pair, already decoded) and the
  /// pipeline has room and the same size, it is queued first; the next call must then be for `next_index`,
  /// else the queued pair is discarded. The pipeline is rebuilt when the size changes. Times "upload" (the
  /// host side of queuing) and "compute_download" (waiting for the result) into `ctx`.
  /// @throws DataError naming `name` when the parameters do not fit this size, or matching it can never fit
  ///         in memory (MemoryBudget); CudaError, OutOfMemory.
  Match match(std::size_t index, const LoadedPair& pair, std::size_t next_index, const LoadedPair* next,
              const std::string& name, cli::ItemContext& ctx);

 private:
  void submit(const LoadedPair& p, std::size_t index);

  Device device_;
  stereo::SgmParams params_;
  MemoryBudget budget_;
  std::deque<std::size_t> queued_;                 // item index of each pair in flight, oldest first
  std::unique_ptr<stereo::SgmPipeline> pipeline_;  // built per image size, reused across the batch
};

}  // namespace s3d::sgm_depth
