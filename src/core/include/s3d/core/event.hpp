#pragma once
// CUDA events without CUDA headers: the handle type is the runtime's opaque pointer, declared here.
#include "s3d/core/stream.hpp"

struct CUevent_st;  // the CUDA runtime's opaque event type; cudaEvent_t is CUevent_st*

namespace s3d {

/// Same type as cudaEvent_t.
using EventHandle = CUevent_st*;

/// An owned CUDA event (move-only), created on the current device. Events order work between streams
/// (`wait` on another stream) and time it (`elapsed_ms`, only when created with timing).
class Event {
 public:
  enum class Timing { kDisabled, kEnabled };

  /// Creates the event. Without timing it is lighter (cudaEventDisableTiming) and cannot be timed.
  /// @throws CudaError; DeviceUnavailable in a build without CUDA.
  explicit Event(Timing timing = Timing::kDisabled);
  ~Event() noexcept;
  Event(Event&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  EventHandle get() const { return handle_; }

  /// Captures the work queued on `stream` so far. Does not block. @throws CudaError.
  void record(StreamHandle stream);
  /// Makes all future work on `stream` wait for the captured work. Does not block the host. @throws CudaError.
  void wait(StreamHandle stream) const;
  /// Blocks the host until the captured work is done. @throws CudaError.
  void synchronize() const;
  /// True when the captured work is done (or nothing was recorded). Does not block. @throws CudaError.
  bool ready() const;
  /// Milliseconds between two completed, timed events (`start` recorded before `stop`). @throws CudaError.
  static float elapsed_ms(const Event& start, const Event& stop);

 private:
  EventHandle handle_ = nullptr;
};

}  // namespace s3d
