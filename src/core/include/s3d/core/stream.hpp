#pragma once
// CUDA streams without CUDA headers: public headers of s3d never need nvcc or cuda_runtime.h.
#include <cstddef>

struct CUstream_st;  // the CUDA runtime's opaque stream type; cudaStream_t is CUstream_st*

namespace s3d {

/// Same type as cudaStream_t; nullptr is the legacy default stream.
using StreamHandle = CUstream_st*;

/// An owned, non-blocking CUDA stream (move-only). Every GPU entry point of s3d takes a StreamHandle;
/// this class is a convenience for callers that want one of their own.
class Stream {
 public:
  /// Creates a non-blocking stream on the current device. @throws CudaError, DeviceUnavailable.
  Stream();
  ~Stream() noexcept;
  Stream(Stream&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  StreamHandle get() const { return handle_; }
  operator StreamHandle() const { return handle_; }

  /// Blocks the host until all work queued on the stream is done. @throws CudaError.
  void synchronize() const;

 private:
  StreamHandle handle_ = nullptr;
};

/// Blocks until `stream` is idle. @throws CudaError.
void synchronize(StreamHandle stream);

/// Index of the CUDA device `stream` belongs to (for nullptr, the calling thread's current device). Does not
/// synchronize. @throws CudaError, DeviceUnavailable (also in a build without CUDA).
int stream_device(StreamHandle stream);

}  // namespace s3d
