#pragma once
// Batches of host clouds through one FpsEngine with the copies overlapping the compute (the core's
// StagingPipeline): while one batch samples on the GPU, the next is gathered into pinned memory and uploaded,
// and the host is free to read and write files. What a dataset run over many clouds wants (pc-sample fps
// --batch); a single call is FpsEngine::run_each. On the CPU, submit samples the batch before it returns.
//
// This header needs no CUDA.
#include <cstdint>
#include <memory>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/views.hpp"

namespace s3d::points {

class FpsPipeline {
 public:
  /// Default number of batches in flight: one sampling, the next one uploading.
  static constexpr int kDefaultDepth = 2;

  /// @param device  `cpu` or `cuda:N` (resolved). @param depth batches in flight, 1..16.
  /// Slots are sized by the first batch and grow (never shrink) when a larger batch is submitted with nothing
  /// in flight. @throws InvalidArgument, DeviceUnavailable, OutOfMemory, CudaError.
  explicit FpsPipeline(const Device& device, int depth = kDefaultDepth);
  /// Waits for the batches in flight (discarding them). Never throws.
  ~FpsPipeline();
  FpsPipeline(FpsPipeline&&) noexcept;
  FpsPipeline& operator=(FpsPipeline&&) noexcept;
  FpsPipeline(const FpsPipeline&) = delete;
  FpsPipeline& operator=(const FpsPipeline&) = delete;

  /// True when `clouds` can be queued now: room for a batch, and the slots hold it (or nothing is in flight,
  /// so they can grow).
  bool fits(const std::vector<PointsView<const float>>& clouds) const;
  /// Queues the clouds (copied into pinned memory before return, in parallel; each checked finite). Results
  /// are those of FpsEngine::run_each(clouds, samples, starts).
  /// @throws InvalidArgument (shapes as FpsBatch::validate, or !fits()), DataError "FPS cloud B: point I has a
  ///         non-finite coordinate (V)" (nothing is queued then), CudaError, OutOfMemory.
  void submit(const std::vector<PointsView<const float>>& clouds, const std::vector<std::int64_t>& samples,
              const std::vector<std::int64_t>& starts);
  /// Waits for the oldest batch: each cloud's indices, local to it, in selection order.
  /// @throws InvalidArgument when nothing is in flight; CudaError.
  std::vector<std::vector<std::int32_t>> retrieve();
  /// Waits for every batch in flight and discards them.
  void drain();
  int in_flight() const;
  bool full() const;
  const Device& device() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace s3d::points
