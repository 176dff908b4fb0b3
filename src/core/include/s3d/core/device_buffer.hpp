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
}  // namespace detail

/// Allocations alive now (device buffers). Test mains check it returns to its start value: a leak check.
std::int64_t live_device_allocations();
/// Bytes held by live DeviceBuffers.
std::int64_t live_device_bytes();

/// A typed, move-only device array. Copying is explicit (`copy_from_host`, `to_host`), never implicit:
/// a hidden device copy is a performance accident. Destruction releases on the stream it was made on.
template <typename T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable<T>::value, "DeviceBuffer holds trivially copyable types");

 public:
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

  /// Makes room for `count` elements; reallocates only when growing (contents are then undefined).
  void resize(std::size_t count, StreamHandle stream = nullptr) {
    if (count > capacity_) {
      reset();
      data_ = static_cast<T*>(detail::device_allocate(count * sizeof(T), stream));
      capacity_ = count;
      stream_ = stream;
    }
    size_ = count;
  }
  /// Releases the storage (stream-ordered).
  void reset() noexcept {
    if (data_) detail::device_release(data_, capacity_ * sizeof(T), stream_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }

  /// Async upload of `count` elements from host memory (pinned for true overlap).
  void copy_from_host_async(const T* host, std::size_t count, StreamHandle stream) {
    resize(count, stream);
    if (count) detail::copy_bytes_async(data_, host, count * sizeof(T), 1, stream);
  }
  /// Async download of the first `count` elements to host memory.
  void copy_to_host_async(T* host, std::size_t count, StreamHandle stream) const {
    if (count) detail::copy_bytes_async(host, data_, count * sizeof(T), 2, stream);
  }
  /// Synchronous convenience: uploads `host` and waits.
  void copy_from_host(const std::vector<T>& host, StreamHandle stream = nullptr) {
    copy_from_host_async(host.data(), host.size(), stream);
    synchronize(stream);
  }
  /// Synchronous convenience: downloads all elements (waits on `stream`).
  std::vector<T> to_host(StreamHandle stream = nullptr) const {
    std::vector<T> out(size_);
    copy_to_host_async(out.data(), size_, stream);
    synchronize(stream);
    return out;
  }
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
