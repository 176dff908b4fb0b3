#pragma once
// Selects a CUDA device for a scope and restores the caller's on exit, so a library call that runs on
// `cuda:N` leaves the calling thread's current device as it found it.

namespace s3d {

class ScopedDevice {
 public:
  /// Makes `index` the calling thread's current device (no-op when it already is).
  /// @throws CudaError, DeviceUnavailable (also in a build without CUDA).
  explicit ScopedDevice(int index);
  /// Restores the previous device; never throws.
  ~ScopedDevice() noexcept;
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace s3d
