// Stand-ins for the CUDA half of the core when the build has no CUDA: every GPU entry point refuses
// with DeviceUnavailable, which the CLI maps to exit 75.
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/stream.hpp"

namespace s3d {
namespace {
[[noreturn]] void no_cuda() { throw DeviceUnavailable("this build of s3d has no CUDA support"); }
}  // namespace

Stream::Stream() { no_cuda(); }
Stream::~Stream() noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept {
  handle_ = other.handle_;
  other.handle_ = nullptr;
  return *this;
}
void Stream::synchronize() const { no_cuda(); }
void synchronize(StreamHandle) { no_cuda(); }
std::int64_t live_device_allocations() { return 0; }
std::int64_t live_device_bytes() { return 0; }

namespace detail {
void* device_allocate(std::size_t, StreamHandle) { no_cuda(); }
void device_release(void*, std::size_t, StreamHandle) noexcept {}
void copy_bytes_async(void*, const void*, std::size_t, int, StreamHandle) { no_cuda(); }
void fill_zero_async(void*, std::size_t, StreamHandle) { no_cuda(); }
}  // namespace detail
}  // namespace s3d
