#pragma once
// Owning device memory. Allocation goes through the CUDA stream-ordered pool (cudaMallocAsync), whose
// release threshold is raised so that memory returned by one item of a batch is reused by the next
// without reaching the driver: a batch pays cudaMalloc once, not per item.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "s3d/core/stream.hpp"

namespace s3d {
namespace detail {
/// Stream-ordered allocation from the current device's pool. @throws OutOfMemory, CudaError.
void* device_allocate(std::size_t bytes, StreamHandle stream);
/// Stream-ordered release; never throws (logs to stderr on failure).
void device_release(void* ptr, std::size_t bytes, StreamHandle stream) noexcept;
/// Byte copies; `kind` follows cudaMemcpyKind (1 = H2D, 2 = D2H, 3 = D2D). Async on `stream`.
void copy_bytes_async(void* dst, const void* src, std::size_t bytes, int kind, StreamHandle stream);
void fill_zero_async(void* dst, std::size_t bytes, StreamHandle stream);
/// Sets every byte to `value` (0xFF makes every int32 -1). Async on `stream`.
void fill_bytes_async(void* dst, std::uint8_t value, std::size_t bytes, StreamHandle stream);
}  // namespace detail

/// Device allocations alive now (made by DeviceBuffer through the pool), for leak checks: the test main
/// compares the count at exit with the count at start. Always 0 in a build without CUDA.
std::int64_t live_device_allocations();
/// Bytes held by live device allocations (their capacities, not their sizes).
std::int64_t live_device_bytes();

/// A typed, move-only device array (the cuCollections storage / tiny-cuda-nn GPUMemory idea).
///
/// - Ownership: the buffer owns its allocation; moving transfers it, copying is deleted. Copies between
///   host and device are explicit calls (`copy_from_host_async`, `to_host`), never implicit: a hidden
///   device copy is a performance accident.
/// - Streams: allocation and release are ordered on the stream given at (re)allocation time; work on other
///   streams that uses the memory must be ordered after it by the caller (events), as with cudaMallocAsync.
/// - Growth: `resize` reallocates only when the new size exceeds the capacity, so an engine that calls
///   `resize(n)` per item allocates once per largest size, not once per item.
/// - Errors: allocation failure throws OutOfMemory; other CUDA failures CudaError; in a build without CUDA
///   every allocating call throws DeviceUnavailable. The destructor never throws (it logs and swallows).
/// - Leak check: every live allocation is counted (`live_device_allocations`), and the test main fails the
///   run when the count at exit differs from the count at start.
template <typename T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable<T>::value, "DeviceBuffer holds trivially copyable types");

 public:
  /// An empty buffer: no allocation, `data() == nullptr`.
  DeviceBuffer() = default;
  /// Uninitialised storage for `count` elements, ordered on `stream`. @throws OutOfMemory, CudaError.
  explicit DeviceBuffer(std::size_t count, StreamHandle stream = nullptr) { resize(count, stream); }
  ~DeviceBuffer() noexcept { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_), stream_(o.stream_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = o.data_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      stream_ = o.stream_;
      o.data_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Makes room for `count` elements, ordered on `stream`. Reallocates only when `count` exceeds the
  /// capacity (the contents are then undefined); shrinking keeps the allocation and its contents.
  /// Does not synchronize. @throws OutOfMemory, CudaError, DeviceUnavailable.
  void resize(std::size_t count, StreamHandle stream = nullptr) {
    if (count > capacity_) {
      reset();
      data_ = static_cast<T*>(detail::device_allocate(count * sizeof(T), stream));
      capacity_ = count;
      stream_ = stream;
    }
    size_ = count;
  }
  /// Releases the storage on the stream it was allocated on (stream-ordered: safe while earlier work on
  /// that stream still uses it). Leaves an empty buffer. Never throws.
  void reset() noexcept {
    if (data_) detail::device_release(data_, capacity_ * sizeof(T), stream_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  /// Device pointer (nullptr when empty); valid until the next growing `resize`, `reset` or destruction.
  T* data() { return data_; }
  const T* data() const { return data_; }
  /// Elements in use (what `resize` last asked for) and elements allocated.
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }

  /// Resizes to `count` and enqueues the upload of `count` elements from `host` on `stream`; returns at once.
  /// `host` must stay valid until the copy completes (use pinned memory for a real overlap with compute;
  /// pageable memory makes the copy synchronous with respect to the host). @throws CudaError.
  void copy_from_host_async(const T* host, std::size_t count, StreamHandle stream) {
    resize(count, stream);
    if (count) detail::copy_bytes_async(data_, host, count * sizeof(T), 1, stream);
  }
  /// Enqueues the download of the first `count` elements into `host` on `stream`; returns at once. The data
  /// is in `host` only after the stream is synchronized. @throws CudaError.
  void copy_to_host_async(T* host, std::size_t count, StreamHandle stream) const {
    if (count) detail::copy_bytes_async(host, data_, count * sizeof(T), 2, stream);
  }
  /// Synchronous convenience: uploads `host`, then synchronizes `stream`. @throws CudaError.
  void copy_from_host(const std::vector<T>& host, StreamHandle stream = nullptr) {
    copy_from_host_async(host.data(), host.size(), stream);
    synchronize(stream);
  }
  /// Synchronous convenience: downloads all `size()` elements, synchronizing `stream`. @throws CudaError.
  std::vector<T> to_host(StreamHandle stream = nullptr) const {
    std::vector<T> out(size_);
    copy_to_host_async(out.data(), size_, stream);
    synchronize(stream);
    return out;
  }
  /// Enqueues a memset of all `size()` elements to zero bytes on `stream`. @throws CudaError.
  void fill_zero_async(StreamHandle stream) {
    if (size_) detail::fill_zero_async(data_, bytes(), stream);
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  StreamHandle stream_ = nullptr;
};

}  // namespace s3d
