// Stand-ins for the CUDA half of the core when the build has no CUDA: every GPU entry point refuses
// with DeviceUnavailable, which the CLI maps to exit 75.
#include <cstdlib>
#include <new>
#include <string>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"
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
int stream_device(StreamHandle) { no_cuda(); }
Event::Event(Timing) { no_cuda(); }
Event::~Event() noexcept = default;
Event& Event::operator=(Event&& other) noexcept {
  handle_ = other.handle_;
  other.handle_ = nullptr;
  return *this;
}
void Event::record(StreamHandle) { no_cuda(); }
void Event::wait(StreamHandle) const { no_cuda(); }
void Event::synchronize() const { no_cuda(); }
bool Event::ready() const { no_cuda(); }
float Event::elapsed_ms(const Event&, const Event&) { no_cuda(); }
ScopedDevice::ScopedDevice(int) { no_cuda(); }
ScopedDevice::~ScopedDevice() noexcept = default;
std::int64_t live_device_allocations() { return 0; }
std::int64_t live_device_bytes() { return 0; }

namespace detail {
void* device_allocate(std::size_t, StreamHandle) { no_cuda(); }
void device_release(void*, std::size_t, StreamHandle) noexcept {}
void copy_bytes_async(void*, const void*, std::size_t, int, StreamHandle) { no_cuda(); }
void fill_zero_async(void*, std::size_t, StreamHandle) { no_cuda(); }
void fill_bytes_async(void*, std::uint8_t, std::size_t, StreamHandle) { no_cuda(); }
void* pinned_allocate(std::size_t bytes) {
  void* ptr = std::malloc(bytes == 0 ? 1 : bytes);
  if (!ptr) throw OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return ptr;
}
void pinned_release(void* ptr) noexcept { std::free(ptr); }
}  // namespace detail
}  // namespace s3d

namespace s3d::detail {
void require_kernel_image() { throw DeviceUnavailable("this build of s3d has no CUDA support"); }
void require_kernel_image(const void*) { throw DeviceUnavailable("this build of s3d has no CUDA support"); }
bool is_kernel_image_error(int) { return false; }
std::string current_gpu_unsupported_message() { return "this build of s3d has no CUDA support"; }
}  // namespace s3d::detail
