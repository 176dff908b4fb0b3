#pragma once
// Host staging for the library calls that take host memory only (three-NN, voxelisation other than a range
// grid, inverse rulebooks, fusion): a device array is copied to the host and the result back, synchronously on
// the call's stream. docs/PYTHON.md lists which calls do this.
#include <vector>

#include "arrays.hpp"

namespace s3d::python {

/// The elements of `input` in host memory: the array itself on the CPU, a synchronous copy of a device array.
template <typename T>
class HostCopy {
 public:
  HostCopy(const Input& input, StreamHandle stream);
  const T* data() const { return data_; }

 private:
  std::vector<T> copy_;
  const T* data_ = nullptr;
};

/// Copies `bytes` from device to host and waits for them (on `stream`).
void copy_to_host(void* host, const void* device, std::size_t bytes, StreamHandle stream);

template <typename T>
HostCopy<T>::HostCopy(const Input& input, StreamHandle stream) {
  if (!input.device.is_cuda()) {
    data_ = input.as<T>();
    return;
  }
  copy_.resize(static_cast<std::size_t>(input.size()));
  copy_to_host(copy_.data(), input.data, copy_.size() * sizeof(T), stream);
  data_ = copy_.data();
}

/// `host` (a host output) on `device`: itself for the CPU, else a device copy ordered on `stream`.
Output to_device(const Output& host, const Device& device, StreamHandle stream);

/// `bytes` of device memory at `source` copied into a new device output of `dtype` and `shape` (the library's
/// engine buffers are reused by its next call: what the caller keeps must be its own).
Output copy_device_output(const void* source, DType dtype, const std::vector<std::int64_t>& shape, const Device& device,
                          StreamHandle stream);

}  // namespace s3d::python
