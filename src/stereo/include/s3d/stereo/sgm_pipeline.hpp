#pragma once
// Pipelined batch matching: the upload of the next pair overlaps the compute of the current one.
//
// SgmEngine::compute() is synchronous: for each pair it copies the images into pinned staging, uploads
// them, runs the kernels, downloads the result and waits, so the GPU idles while the host reads the next
// pair and the copy engines idle while the kernels run. SgmPipeline keeps up to `depth` pairs in flight on
// the core's StagingPipeline (s3d/core/staging_pipeline.hpp), with SgmEngine::compute_device on the
// engine's stream as the op:
//
//   submit(L, R)   copy L, R into a free pinned staging slot (host memcpy; the caller's images may be
//                  reused as soon as submit returns), then queue without waiting:
//                    upload stream:    H2D of the slot's images               -> event "uploaded"
//                    engine stream:    wait "uploaded"; SgmEngine::compute_device into the slot's device
//                                      output                                  -> event "computed"
//                    download stream:  wait "computed"; D2H into the slot's pinned output -> "downloaded"
//   retrieve(...)  wait for "downloaded" of the OLDEST pair in flight, copy its disparity (and confidence)
//                  into caller storage and free its slot.
//
// So while pair i runs on the engine stream, pair i+1 is uploaded and pair i-1 downloaded on the two copy
// engines, and the host is free to read / decode / write files. A slot is reused only after retrieve()
// waited for its download, which is ordered after its compute and its upload (events), so no staging or
// device buffer is overwritten while in use. Results come back in submission order (FIFO), bit-identical
// to SgmEngine::compute on the same pair (same engine, same kernels).
//
// On a CPU engine the same API computes synchronously inside submit() (from the slot's host copy of the
// pair into its host output) and retrieve() copies out: callers need no second code path.
#include <cstdint>
#include <memory>

#include "s3d/core/device.hpp"
#include "s3d/core/views.hpp"
#include "s3d/stereo/sgm.hpp"

namespace s3d::stereo {

/// Up to `depth` stereo pairs in flight on one SgmEngine (see the file comment for the streams and events).
///
/// Memory: the engine's own (see SgmEngine), plus per slot, for W*H pixels: pinned host input 4*W*H bytes
/// (two images, up to 16 bits), device input 4*W*H, device output 4*W*H (8*W*H with params.confidence) and
/// pinned host output of the same size. CPU: per slot the host input (4*W*H) and the host output (4*W*H,
/// 8*W*H with params.confidence), ordinary heap memory; nothing on a device.
///
/// Not thread-safe: call submit/retrieve from one thread. After a CudaError (or OutOfMemory) from
/// submit/retrieve the pipeline's state is undefined: destroy it (the destructor is safe then too).
/// Moving transfers the pairs in flight; a moved-from pipeline may only be destroyed or assigned to.
class SgmPipeline {
 public:
  /// Default number of pairs in flight: one computing, one uploading/downloading.
  static constexpr int kDefaultDepth = 2;
  /// Largest accepted depth (more slots buy nothing but pinned memory once the copies overlap).
  static constexpr int kMaxDepth = 8;

  /// Builds the engine (SgmEngine(device, params, width, height)) and `depth` slots; allocates everything
  /// here (device buffers, pinned host memory, two copy streams, events), nothing later.
  /// @param device  `cpu` or `cuda:N` (`auto` is resolved by SgmEngine).
  /// @param depth   pairs in flight, 1..kMaxDepth (1 = no overlap, still asynchronous with the host).
  /// @throws InvalidArgument (params.validate(width, height), depth out of range), DeviceUnavailable,
  ///         OutOfMemory, CudaError.
  SgmPipeline(const Device& device, const SgmParams& params, int width, int height, int depth = kDefaultDepth);
  /// Waits for every pair in flight (discarding the results), then frees everything. Never throws; a CUDA
  /// failure while waiting is logged to stderr.
  ~SgmPipeline();
  SgmPipeline(SgmPipeline&&) noexcept;
  SgmPipeline& operator=(SgmPipeline&&) noexcept;
  SgmPipeline(const SgmPipeline&) = delete;
  SgmPipeline& operator=(const SgmPipeline&) = delete;

  /// Queues one pair of host images (any pitch >= width; 8-bit and 16-bit pairs may be mixed within a
  /// batch, not within a pair). The images are copied before return. Does not wait for the GPU (on a CPU
  /// engine it computes the pair before returning).
  /// @return the pair's sequence number: 0 for the first submit of this pipeline, then +1 per submit.
  /// @throws InvalidArgument when a size differs from the engine's, an image is null or its pitch is
  ///         smaller than its width, or `full()` (retrieve first); nothing is queued then.
  ///         CudaError / OutOfMemory on a device failure.
  std::uint64_t submit(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right);
  std::uint64_t submit(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right);

  /// Waits for the oldest pair in flight and copies its result into caller storage: `disparity` gets
  /// width*height floats (row-major, pitch = width; kInvalidDisparity where invalid), `confidence` (may be
  /// null; ignored unless params.confidence) the same count. Synchronizes only with that pair's download.
  /// @return the pair's sequence number (results come back in submission order).
  /// @throws InvalidArgument when nothing is in flight or `disparity` is null (the pair stays in flight);
  ///         CudaError when the device failed on the pair.
  std::uint64_t retrieve(float* disparity, float* confidence);
  /// Same, into an owning result (vectors resized to the engine's size; confidence empty unless
  /// params.confidence).
  std::uint64_t retrieve(SgmResult& result);

  /// Waits for every pair in flight and discards their results; the pipeline is then empty and reusable.
  /// @throws CudaError when the device failed on one of them (all slots are freed regardless).
  void drain();

  /// Pairs submitted and not yet retrieved (0..depth()).
  int in_flight() const;
  /// True when in_flight() == depth(): submit() would throw.
  bool full() const;
  int depth() const;
  /// Sequence number the next submit() will return.
  std::uint64_t next_sequence() const;

  /// The engine the pairs run on (for its parameters, size and device). Do not call its compute methods
  /// while pairs are in flight.
  const SgmEngine& engine() const;
  int width() const;
  int height() const;

  class Impl;  ///< the engine and its StagingPipeline

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace s3d::stereo
