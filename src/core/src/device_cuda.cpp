// The CUDA half of device.hpp and device_buffer.hpp (built only with S3D_WITH_CUDA).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "s3d/core/config.hpp"
#include "s3d/core/cuda_check.cuh"
#include "s3d/core/device.hpp"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/parallel.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/scoped_device.hpp"

namespace s3d {
namespace {
std::atomic<std::int64_t> g_live_allocations{0};
std::atomic<std::int64_t> g_live_bytes{0};

// Keeps freed blocks in the device's default pool instead of returning them to the driver at each
// synchronisation, so a batch of same-sized items allocates from the pool after the first.
void configure_pool(int device) {
  static std::atomic<int> configured_mask{0};
  if (device < 0 || device >= 31) return;
  int bit = 1 << device;
  if (configured_mask.fetch_or(bit) & bit) return;
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
    std::uint64_t threshold = UINT64_MAX;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
  cudaGetLastError();
}

// The release half of Stream and Event (destructor and move-assignment): never throws, so a failure is
// logged and its error cleared before it can be blamed on an unrelated later call.
void destroy_quietly(cudaStream_t stream) noexcept {
  if (stream && cudaStreamDestroy(stream) != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "s3d: warning: cudaStreamDestroy failed\n");
  }
}
void destroy_quietly(cudaEvent_t event) noexcept {
  if (event && cudaEventDestroy(event) != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "s3d: warning: cudaEventDestroy failed\n");
  }
}
}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

int current_cuda_device() {
  if (cuda_device_count() == 0) return -1;
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return device;
}

Device resolve_device(const Device& requested, bool* fell_back_to_cpu) {
  if (fell_back_to_cpu) *fell_back_to_cpu = false;
  if (requested.is_cpu()) return requested;
  int count = cuda_device_count();
  if (requested.is_auto()) {
    if (count == 0) {
      if (fell_back_to_cpu) *fell_back_to_cpu = true;
      return Device(Device::Kind::kCpu);
    }
    S3D_CUDA_CHECK(cudaSetDevice(0));
    configure_pool(0);
    detail::require_kernel_image();
    return Device(Device::Kind::kCuda, 0);
  }
  if (count == 0)
    throw DeviceUnavailable("device " + requested.to_string() + " requested but no CUDA device is visible");
  if (requested.index() >= count)
    throw DeviceUnavailable("device " + requested.to_string() + " requested but only " + std::to_string(count) +
                            " CUDA device(s) are visible");
  S3D_CUDA_CHECK(cudaSetDevice(requested.index()));
  configure_pool(requested.index());
  detail::require_kernel_image();
  return requested;
}

std::string describe_device(const Device& device) {
  if (!device.is_cuda()) return "CPU (" + std::to_string(cpu_threads()) + " threads)";
  cudaDeviceProp prop{};
  S3D_CUDA_CHECK(cudaGetDeviceProperties(&prop, device.index()));
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.0f GiB)", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::size_t device_memory_total(const Device& device) {
  if (!device.is_cuda()) throw DeviceUnavailable("device " + device.to_string() + " is not a GPU");
  const ScopedDevice current(device.index());
  std::size_t free_bytes = 0, total_bytes = 0;
  S3D_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes;
}

std::string cuda_build_info() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaGetLastError();
  return "on (runtime " + std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10) + ", archs " +
         S3D_CUDA_ARCHS + ")";
}

Stream::Stream() { S3D_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }

Stream::~Stream() noexcept { destroy_quietly(handle_); }

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    destroy_quietly(handle_);
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

void Stream::synchronize() const { s3d::synchronize(handle_); }

void synchronize(StreamHandle stream) { S3D_CUDA_CHECK(cudaStreamSynchronize(stream)); }

int stream_device(StreamHandle stream) {
  int device = -1;
  S3D_CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

Event::Event(Timing timing) {
  const unsigned flags = timing == Timing::kEnabled ? cudaEventDefault : cudaEventDisableTiming;
  S3D_CUDA_CHECK(cudaEventCreateWithFlags(&handle_, flags));
}

Event::~Event() noexcept { destroy_quietly(handle_); }

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    destroy_quietly(handle_);
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

void Event::record(StreamHandle stream) { S3D_CUDA_CHECK(cudaEventRecord(handle_, stream)); }
void Event::wait(StreamHandle stream) const { S3D_CUDA_CHECK(cudaStreamWaitEvent(stream, handle_, 0)); }
void Event::synchronize() const { S3D_CUDA_CHECK(cudaEventSynchronize(handle_)); }

bool Event::ready() const {
  // NotReady is an answer, not a failure. Should the runtime record it as the thread's last error, clear it,
  // but only when nothing was pending before the query: an earlier launch failure (last errors are per
  // thread) must stay for its own check to see.
  const bool error_pending = cudaPeekAtLastError() != cudaSuccess;
  const cudaError_t status = cudaEventQuery(handle_);
  if (status == cudaErrorNotReady) {
    if (!error_pending) cudaGetLastError();
    return false;
  }
  S3D_CUDA_CHECK(status);
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.0f;
  S3D_CUDA_CHECK(cudaEventElapsedTime(&ms, start.handle_, stop.handle_));
  return ms;
}

ScopedDevice::ScopedDevice(int index) {
  int current = 0;
  S3D_CUDA_CHECK(cudaGetDevice(&current));
  if (current != index) {
    S3D_CUDA_CHECK(cudaSetDevice(index));
    previous_ = current;
  }
}

ScopedDevice::~ScopedDevice() noexcept {
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "s3d: warning: could not restore CUDA device %d\n", previous_);
  }
}

std::int64_t live_device_allocations() { return g_live_allocations.load(); }
std::int64_t live_device_bytes() { return g_live_bytes.load(); }

namespace detail {

void* device_allocate(std::size_t bytes, StreamHandle stream) {
  if (bytes == 0) bytes = 1;  // a distinct, valid pointer keeps ownership logic uniform
  int device = 0;
  S3D_CUDA_CHECK(cudaGetDevice(&device));
  configure_pool(device);
  void* ptr = nullptr;
  cudaError_t status = cudaMallocAsync(&ptr, bytes, stream);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (status == cudaErrorMemoryAllocation)
      throw OutOfMemory("out of GPU memory allocating " + std::to_string(bytes) + " bytes");
    throw_cuda_error(status, "cudaMallocAsync", __FILE__, __LINE__);
  }
  g_live_allocations.fetch_add(1);
  g_live_bytes.fetch_add(static_cast<std::int64_t>(bytes));
  return ptr;
}

void device_release(void* ptr, std::size_t bytes, StreamHandle stream) noexcept {
  if (!ptr) return;
  if (cudaFreeAsync(ptr, stream) != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "s3d: warning: cudaFreeAsync failed\n");
    return;  // the memory is still allocated: the live counters keep counting it
  }
  g_live_allocations.fetch_sub(1);
  g_live_bytes.fetch_sub(static_cast<std::int64_t>(bytes == 0 ? 1 : bytes));
}

void copy_bytes_async(void* dst, const void* src, std::size_t bytes, int kind, StreamHandle stream) {
  S3D_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, static_cast<cudaMemcpyKind>(kind), stream));
}

void fill_zero_async(void* dst, std::size_t bytes, StreamHandle stream) {
  S3D_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream));
}

void fill_bytes_async(void* dst, std::uint8_t value, std::size_t bytes, StreamHandle stream) {
  S3D_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream));
}

// Without a visible GPU (a CUDA build on a CPU-only machine) there is nothing to page-lock for: staging code
// runs unchanged on ordinary heap memory. The device count is fixed for the life of the process.
bool pinning_available() {
  static const bool available = cuda_device_count() > 0;
  return available;
}

void* pinned_allocate(std::size_t bytes) {
  if (!pinning_available()) {
    void* heap = std::malloc(bytes == 0 ? 1 : bytes);
    if (!heap) throw OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes");
    return heap;
  }
  void* ptr = nullptr;
  const cudaError_t status = cudaMallocHost(&ptr, bytes == 0 ? 1 : bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (status == cudaErrorMemoryAllocation)
      throw OutOfMemory("out of page-locked host memory allocating " + std::to_string(bytes) + " bytes");
    throw_cuda_error(status, "cudaMallocHost", __FILE__, __LINE__);
  }
  return ptr;
}

void pinned_release(void* ptr) noexcept {
  if (!pinning_available()) return std::free(ptr);
  if (ptr && cudaFreeHost(ptr) != cudaSuccess) {
    cudaGetLastError();
    std::fprintf(stderr, "s3d: warning: cudaFreeHost failed\n");
  }
}

}  // namespace detail
}  // namespace s3d
