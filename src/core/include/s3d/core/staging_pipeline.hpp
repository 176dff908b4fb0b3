#pragma once
// Streams host items through a device op with the copies overlapping the compute: while item i computes,
// item i+1 uploads and item i-1 downloads, and the host is free to read and write files. The op brings its
// sizes and two callbacks (pack its input into pinned memory, queue its compute); the pipeline owns
// everything else: `depth` slots of pinned and device memory, the upload and download streams, the events
// that order them, and the FIFO of items in flight.
//
// Per item, on submit (nothing waits on the host):
//   host:            pack(slot.host_in)                         (the caller's input may be reused at once)
//   upload stream:   H2D slot.host_in -> slot.device_in              -> event "uploaded"
//   compute stream:  wait "uploaded"; compute(slot, compute stream)  -> event "computed"
//   download stream: wait "computed"; D2H slot.device_out -> slot.host_out -> event "downloaded"
// retrieve() waits for the oldest item's "downloaded" (which follows its upload and compute), hands
// slot.host_out to the caller's unpack callback and frees the slot: one host-side wait guards every buffer
// of a slot, so no buffer is overwritten while in use.
//
// On the CPU device there is nothing to overlap: the same calls run the op synchronously inside submit(),
// with `device_in` = `host_in` and `device_out` = `host_out` (host memory), so an op needs one code path
// for the ring and one compute callback per backend.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "s3d/core/device.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/stream.hpp"

namespace s3d {

/// One slot's memory as the op sees it. Pointers stay valid for the life of the pipeline.
struct StagingSlot {
  std::byte* host_in = nullptr;     ///< pinned host input (the pack callback writes it)
  std::byte* device_in = nullptr;   ///< device input (host memory on the CPU): the upload of host_in
  std::byte* device_out = nullptr;  ///< device output (host memory on the CPU): the compute writes it
  std::byte* host_out = nullptr;    ///< pinned host output: the download of device_out
  int index = 0;                    ///< 0..depth-1
};

/// Bytes moved for one item: `upload` of host_in before the compute, `download` of device_out after it.
/// Each at most the capacity given at construction (items of a batch may differ, e.g. 8- and 16-bit images).
struct StagingBytes {
  std::size_t upload = 0;
  std::size_t download = 0;
};

/// Up to `depth` items in flight through one op (see the file comment for the streams and events).
///
/// - Allocation: everything (pinned and device memory of every slot, two copy streams, three events per
///   slot; a compute stream when none is given) in the constructor, nothing per item.
/// - Threads: not thread-safe; call submit/retrieve from one thread. Every call makes the pipeline's device
///   current for its duration and restores the caller's.
/// - Errors: after a CudaError or OutOfMemory from submit/retrieve the state is undefined: destroy the
///   pipeline (the destructor is safe then too). An InvalidArgument leaves it unchanged.
/// - Moving transfers the items in flight; a moved-from pipeline may only be destroyed or assigned to.
class StagingPipeline {
 public:
  /// Largest accepted depth (more slots buy nothing but pinned memory once the copies overlap).
  static constexpr int kMaxDepth = 16;

  /// @param device          `cpu` or `cuda:N` (already resolved: `auto` is refused).
  /// @param depth           items in flight, 1..kMaxDepth (1: no overlap, still asynchronous with the host).
  /// @param capacity        the most bytes one item uploads and downloads (the slots' sizes).
  /// @param compute_stream  where compute callbacks are queued (the op's own stream, whose work stays in
  ///                        order across items); nullptr: the pipeline makes one. Must belong to `device`
  ///                        and outlive the pipeline.
  /// @throws InvalidArgument (depth out of range, `auto`, a compute_stream of another device),
  ///         DeviceUnavailable, OutOfMemory, CudaError.
  StagingPipeline(const Device& device, int depth, StagingBytes capacity, StreamHandle compute_stream = nullptr);
  /// Waits for every item in flight (discarding the results), then frees everything. Never throws; a CUDA
  /// failure while waiting is logged to stderr.
  ~StagingPipeline();
  StagingPipeline(StagingPipeline&&) noexcept;
  StagingPipeline& operator=(StagingPipeline&&) noexcept;
  StagingPipeline(const StagingPipeline&) = delete;
  StagingPipeline& operator=(const StagingPipeline&) = delete;

  /// Queues one item: `pack(const StagingSlot&)` fills slot.host_in on the host (at most bytes.upload
  /// bytes), then the upload, `compute(const StagingSlot&, StreamHandle)` (queue the op on the given stream,
  /// reading device_in and writing device_out; on the CPU, compute synchronously) and the download are
  /// queued. Returns without waiting for the device.
  /// The compute callback may fork work onto streams of its own, but must join all of it back into the
  /// given stream (an event recorded there and waited for on the given stream) before it returns: the
  /// download, the slot's reuse and the destructor wait only on the given stream.
  /// @return the item's sequence number: 0 for the first submit of this pipeline, then +1 per submit.
  /// @throws InvalidArgument when full() or `bytes` exceeds the capacity (nothing is queued then);
  ///         whatever pack or compute throw (the slot stays free, the sequence number is not used);
  ///         CudaError / OutOfMemory on a device failure.
  template <typename Pack, typename Compute>
  std::uint64_t submit(StagingBytes bytes, Pack&& pack, Compute&& compute) {
    std::optional<ScopedDevice> current;
    enter_device(current);
    const StagingSlot& slot = reserve(bytes);
    try {
      pack(slot);
      const StreamHandle stream = begin_compute(slot, bytes);
      compute(slot, stream);
    } catch (...) {
      abandon(slot);
      throw;
    }
    return commit(slot, bytes);
  }

  /// Waits for the oldest item in flight, calls `unpack(const StagingSlot&)` (read slot.host_out) and frees
  /// its slot. Synchronizes only with that item's download.
  /// @return the item's sequence number (items come back in submission order).
  /// @throws InvalidArgument when nothing is in flight; CudaError when the device failed on the item;
  ///         whatever unpack throws (the item stays in flight then).
  template <typename Unpack>
  std::uint64_t retrieve(Unpack&& unpack) {
    std::optional<ScopedDevice> current;
    enter_device(current);
    const StagingSlot& slot = wait_oldest();
    unpack(slot);
    return release_oldest();
  }

  /// Waits for every item in flight and discards them; the pipeline is then empty and reusable.
  /// @throws CudaError when the device failed on one of them (every slot is freed regardless).
  void drain();

  /// Items submitted and not yet retrieved (0..depth()).
  int in_flight() const;
  /// True when in_flight() == depth(): submit() would throw.
  bool full() const { return in_flight() == depth(); }
  int depth() const;
  /// Sequence number the next submit() will return.
  std::uint64_t next_sequence() const;
  const Device& device() const;
  StagingBytes capacity() const;
  /// The stream compute callbacks run on (nullptr on the CPU).
  StreamHandle compute_stream() const;

  class Impl;

 private:
  // The steps of submit() and retrieve() around the op's callbacks (staging_pipeline.cpp), called with the
  // pipeline's device current (enter_device; nothing to select on the CPU).
  void enter_device(std::optional<ScopedDevice>& scope) const;
  const StagingSlot& reserve(StagingBytes bytes);
  StreamHandle begin_compute(const StagingSlot& slot, StagingBytes bytes);
  std::uint64_t commit(const StagingSlot& slot, StagingBytes bytes);
  void abandon(const StagingSlot& slot) noexcept;
  const StagingSlot& wait_oldest();
  std::uint64_t release_oldest();

  std::unique_ptr<Impl> impl_;
};

}  // namespace s3d
