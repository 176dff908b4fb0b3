#include "staging.hpp"

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/scoped_device.hpp"

namespace s3d::python {

void copy_to_host(void* host, const void* device, std::size_t bytes, StreamHandle stream) {
  if (bytes == 0) return;
  nb::gil_scoped_release release;
  detail::copy_bytes_async(host, device, bytes, 2, stream);
  synchronize(stream);
}

Output to_device(const Output& host, const Device& device, StreamHandle stream) {
  if (!device.is_cuda()) return host;
  std::vector<std::int64_t> shape(host.array.shape_ptr(), host.array.shape_ptr() + host.array.ndim());
  Output out = allocate(host.dtype, shape, device, stream);
  if (host.array.nbytes() > 0) {
    ScopedDevice scoped(device.index());
    detail::copy_bytes_async(out.data, host.data, host.array.nbytes(), 1, stream);
  }
  return out;
}

Output copy_device_output(const void* source, DType dtype, const std::vector<std::int64_t>& shape, const Device& device,
                          StreamHandle stream) {
  Output out = allocate(dtype, shape, device, stream);
  if (out.array.nbytes() > 0) {
    ScopedDevice scoped(device.index());
    detail::copy_bytes_async(out.data, source, out.array.nbytes(), 3, stream);
  }
  return out;
}

}  // namespace s3d::python
