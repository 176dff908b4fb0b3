#pragma once
// Owned executable CUDA graphs: work captured once from a stream and replayed with one launch, which pays off
// when a short call of many small kernels repeats (launch latency, not the kernels, bounds it). Needs the
// CUDA runtime headers (included only by .cu backends).
#include <cuda_runtime.h>

#include <cstdio>
#include <utility>

#include "s3d/core/cuda_check.cuh"
#include "s3d/core/stream.hpp"

namespace s3d {

/// An instantiated CUDA graph (cudaGraphExec_t), move-only; empty until a capture succeeds.
class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph() noexcept { reset(); }
  CudaGraph(CudaGraph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  CudaGraph& operator=(CudaGraph&& other) noexcept {
    if (this != &other) {
      reset();
      exec_ = std::exchange(other.exec_, nullptr);
    }
    return *this;
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Calls `enqueue()` while `stream` is in (thread-local) capture mode and instantiates what it queued,
  /// replacing any previous graph; nothing runs on the device. `stream` must not be the legacy default stream.
  /// Returns false, with the graph empty and no CUDA error left pending, when the work cannot be captured (a
  /// call that capture forbids invalidated it, e.g. a host synchronization or a launch kind the driver cannot
  /// put in a graph) or cannot be instantiated: the caller then runs the work eagerly. Any other exception from
  /// `enqueue` is a failure of the work itself, not of capturing it: the capture is ended and discarded, the
  /// sticky error cleared, and the exception rethrown. @throws CudaError when capture cannot even begin.
  template <typename Enqueue>
  bool capture(StreamHandle stream, Enqueue&& enqueue) {
    reset();
    S3D_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      const cudaError_t ended = cudaStreamEndCapture(stream, &partial);
      if (partial != nullptr) cudaGraphDestroy(partial);
      cudaGetLastError();
      if (is_capture_error(ended)) return false;
      throw;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    if (ended == cudaSuccess && graph != nullptr && cudaGraphInstantiate(&exec_, graph, 0) != cudaSuccess)
      exec_ = nullptr;
    if (graph != nullptr && cudaGraphDestroy(graph) != cudaSuccess) {
      cudaGetLastError();
      std::fprintf(stderr, "s3d: warning: cudaGraphDestroy failed\n");
    }
    if (exec_ == nullptr) cudaGetLastError();
    return exec_ != nullptr;
  }

  /// Queues one replay on `stream`; returns at once. @throws CudaError.
  void launch(StreamHandle stream) const { S3D_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

  bool empty() const { return exec_ == nullptr; }

  /// Destroys the graph (safe while a replay is still running: the driver defers the release). Never throws.
  void reset() noexcept {
    if (exec_ != nullptr && cudaGraphExecDestroy(exec_) != cudaSuccess) {
      cudaGetLastError();
      std::fprintf(stderr, "s3d: warning: cudaGraphExecDestroy failed\n");
    }
    exec_ = nullptr;
  }

 private:
  /// The errors by which the runtime reports that a stream's capture was broken (not that the work failed).
  static bool is_capture_error(cudaError_t status) {
    switch (status) {
      case cudaErrorStreamCaptureUnsupported:
      case cudaErrorStreamCaptureInvalidated:
      case cudaErrorStreamCaptureMerge:
      case cudaErrorStreamCaptureUnmatched:
      case cudaErrorStreamCaptureUnjoined:
      case cudaErrorStreamCaptureIsolation:
      case cudaErrorStreamCaptureImplicit:
      case cudaErrorCapturedEvent:
      case cudaErrorStreamCaptureWrongThread:
        return true;
      default:
        return false;
    }
  }

  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace s3d
