#pragma once
// Page-locked (pinned) host memory: the only host memory a DMA engine can copy from while the GPU computes,
// so every upload or download that must overlap compute stages through one of these.
#include <cstddef>
#include <type_traits>

namespace s3d {
namespace detail {
/// Page-locked host allocation (cudaMallocHost); without CUDA or without a visible GPU, ordinary heap memory,
/// so CPU code can use the same staging types. @throws OutOfMemory.
void* pinned_allocate(std::size_t bytes);
/// Frees what pinned_allocate returned; never throws (logs to stderr on failure).
void pinned_release(void* ptr) noexcept;
}  // namespace detail

/// A typed, move-only array of page-locked host memory.
///
/// - Ownership: owns its allocation; moving transfers it, copying is deleted.
/// - Growth: `resize` reallocates only when the new size exceeds the capacity (contents then undefined), so a
///   staging slot sized for the largest item of a batch is allocated once.
/// - Synchronisation: freeing page-locked memory synchronizes the device (cudaFreeHost); keep these alive
///   for the life of an engine, not per item.
template <typename T>
class PinnedBuffer {
  static_assert(std::is_trivially_copyable<T>::value, "PinnedBuffer holds trivially copyable types");

 public:
  PinnedBuffer() = default;
  /// Uninitialised storage for `count` elements. @throws OutOfMemory.
  explicit PinnedBuffer(std::size_t count) { resize(count); }
  ~PinnedBuffer() noexcept { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      data_ = o.data_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.data_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// Makes room for `count` elements; reallocates only above the capacity. @throws OutOfMemory.
  void resize(std::size_t count) {
    if (count > capacity_) {
      reset();
      data_ = static_cast<T*>(detail::pinned_allocate(count * sizeof(T)));
      capacity_ = count;
    }
    size_ = count;
  }
  /// Frees the storage (synchronizes the device when CUDA is built). Never throws.
  void reset() noexcept {
    if (data_) detail::pinned_release(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace s3d
