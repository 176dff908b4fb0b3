#pragma once
// Internal: the backend side of SgmPipeline. The dispatcher (sgm_pipeline.cpp) owns the ring bookkeeping
// (oldest slot, count, sequence numbers) and the argument checks; a backend only fills, waits for and
// reads slots by index.
#include <cstdint>
#include <memory>
#include <utility>

#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_pipeline.hpp"

namespace s3d::stereo {

class SgmPipeline::Impl {
 public:
  Impl(SgmEngine engine, int depth) : engine_(std::move(engine)), depth_(depth) {}
  virtual ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Queues a checked pair into free slot `slot` (its previous pair, if any, was waited for).
  virtual void submit(int slot, ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right) = 0;
  virtual void submit(int slot, ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right) = 0;
  /// Waits for slot `slot` and copies its result out (`confidence` may be null).
  virtual void retrieve(int slot, float* disparity, float* confidence) = 0;
  /// Waits for slot `slot` without copying.
  virtual void wait(int slot) = 0;

  SgmEngine engine_;
  int depth_;
  int oldest_ = 0;  // slot of the oldest pair in flight
  int count_ = 0;   // pairs in flight
  std::uint64_t next_sequence_ = 0;
};

namespace detail {
/// The CUDA backend (sgm_pipeline_cuda.cu); `engine` is a CUDA engine.
std::unique_ptr<SgmPipeline::Impl> make_cuda_pipeline(SgmEngine engine, int depth);
}  // namespace detail

}  // namespace s3d::stereo
