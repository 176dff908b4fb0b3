// StagingPipeline: the slot ring (FIFO bookkeeping, argument checks) and its two memory layouts. Built only
// on the core's owners (Stream, Event, PinnedBuffer, DeviceBuffer), so the same file serves builds with and
// without CUDA; on the CPU device no CUDA call is made.
#include "s3d/core/staging_pipeline.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/event.hpp"
#include "s3d/core/pinned_buffer.hpp"

namespace s3d {
namespace {

constexpr int kHostToDevice = 1;  // detail::copy_bytes_async kinds (cudaMemcpyKind)
constexpr int kDeviceToHost = 2;

void log_failure(const char* what, const std::exception& e) noexcept {
  std::fprintf(stderr, "s3d: StagingPipeline: %s failed: %s\n", what, e.what());
}

}  // namespace

class StagingPipeline::Impl {
 public:
  // Device memory, streams and events of the CUDA layout. The streams are declared first so that they are
  // destroyed last: the device buffers release their memory ordered on the upload stream.
  struct GpuSlot {
    PinnedBuffer<std::byte> host_in, host_out;
    DeviceBuffer<std::byte> device_in, device_out;
    Event uploaded, computed, downloaded;
  };
  struct Gpu {
    std::optional<Stream> own_compute;
    StreamHandle compute = nullptr;
    Stream upload, download;
    std::vector<GpuSlot> slots;
  };

  Impl(const Device& device, int depth, StagingBytes capacity, StreamHandle compute_stream)
      : device_(device), depth_(depth), capacity_(capacity) {
    slots_.resize(static_cast<std::size_t>(depth));
    if (!device.is_cuda()) {
      host_in_.assign(slots_.size(), std::vector<std::byte>(capacity.upload));
      host_out_.assign(slots_.size(), std::vector<std::byte>(capacity.download));
      for (int i = 0; i < depth; ++i) {
        slots_[i] = StagingSlot{host_in_[i].data(), host_in_[i].data(), host_out_[i].data(), host_out_[i].data(), i};
      }
      return;
    }
    const ScopedDevice current(device.index());
    gpu_ = std::make_unique<Gpu>();
    Gpu& g = *gpu_;
    if (compute_stream) {
      const int owner = stream_device(compute_stream);
      if (owner != device.index())
        throw InvalidArgument("StagingPipeline: the compute stream belongs to cuda:" + std::to_string(owner) +
                              ", not " + device.to_string());
      g.compute = compute_stream;
    } else {
      g.own_compute.emplace();
      g.compute = g.own_compute->get();
    }
    g.slots.reserve(slots_.size());
    for (int i = 0; i < depth; ++i) {
      GpuSlot& s = g.slots.emplace_back();
      s.host_in.resize(capacity.upload);
      s.host_out.resize(capacity.download);
      s.device_in.resize(capacity.upload, g.upload);
      s.device_out.resize(capacity.download, g.upload);
      slots_[i] = StagingSlot{s.host_in.data(), s.device_in.data(), s.device_out.data(), s.host_out.data(), i};
    }
    // The pool allocations are ordered on the upload stream; the compute and download streams use them too.
    g.upload.synchronize();
  }

  ~Impl() {
    if (!gpu_) return;
    std::optional<ScopedDevice> current;
    try {
      current.emplace(device_.index());
    } catch (const std::exception& e) {
      log_failure("selecting the device", e);
    }
    for (StreamHandle s : {gpu_->upload.get(), gpu_->compute, gpu_->download.get()}) wait_quietly(s);
    gpu_.reset();
  }

  const StagingSlot& reserve(StagingBytes bytes) const {
    if (count_ == depth_)
      throw InvalidArgument("StagingPipeline::submit: " + std::to_string(depth_) +
                            " items already in flight (the depth); retrieve one first");
    if (bytes.upload > capacity_.upload || bytes.download > capacity_.download)
      throw InvalidArgument("StagingPipeline::submit: " + std::to_string(bytes.upload) + " bytes up / " +
                            std::to_string(bytes.download) + " down exceed the slots' " +
                            std::to_string(capacity_.upload) + " / " + std::to_string(capacity_.download));
    return slots_[(oldest_ + count_) % depth_];
  }

  StreamHandle begin_compute(const StagingSlot& slot, StagingBytes bytes) {
    if (!gpu_) return nullptr;
    GpuSlot& s = gpu_->slots[slot.index];
    if (bytes.upload) detail::copy_bytes_async(slot.device_in, slot.host_in, bytes.upload, kHostToDevice, gpu_->upload);
    s.uploaded.record(gpu_->upload);
    s.uploaded.wait(gpu_->compute);
    return gpu_->compute;
  }

  std::uint64_t commit(const StagingSlot& slot, StagingBytes bytes) {
    if (gpu_) {
      GpuSlot& s = gpu_->slots[slot.index];
      s.computed.record(gpu_->compute);
      s.computed.wait(gpu_->download);
      if (bytes.download)
        detail::copy_bytes_async(slot.host_out, slot.device_out, bytes.download, kDeviceToHost, gpu_->download);
      s.downloaded.record(gpu_->download);
    }
    ++count_;
    return next_sequence_++;
  }

  // A submit that failed after its upload was queued: the slot stays free, so nothing of it may still run
  // when the next submit packs into it.
  void abandon() noexcept {
    if (!gpu_) return;
    wait_quietly(gpu_->upload);
    wait_quietly(gpu_->compute);
  }

  const StagingSlot& wait_oldest() const {
    if (count_ == 0) throw InvalidArgument("StagingPipeline::retrieve: nothing in flight");
    const StagingSlot& slot = slots_[oldest_];
    if (gpu_) gpu_->slots[slot.index].downloaded.synchronize();
    return slot;
  }

  std::uint64_t release_oldest() {
    oldest_ = (oldest_ + 1) % depth_;
    --count_;
    return next_sequence_ - static_cast<std::uint64_t>(count_) - 1;
  }

  void drain() {
    std::exception_ptr first;
    while (count_ > 0) {
      try {
        wait_oldest();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
      release_oldest();
    }
    if (first) std::rethrow_exception(first);
  }

  static void wait_quietly(StreamHandle stream) noexcept {
    try {
      synchronize(stream);
    } catch (const std::exception& e) {
      log_failure("waiting for a stream", e);
    }
  }

  Device device_;
  int depth_;
  StagingBytes capacity_;
  int oldest_ = 0;  // slot of the oldest item in flight
  int count_ = 0;   // items in flight
  std::uint64_t next_sequence_ = 0;
  std::vector<StagingSlot> slots_;
  std::vector<std::vector<std::byte>> host_in_, host_out_;  // the CPU layout
  std::unique_ptr<Gpu> gpu_;                                // the CUDA layout
};

StagingPipeline::StagingPipeline(const Device& device, int depth, StagingBytes capacity, StreamHandle compute_stream) {
  if (depth < 1 || depth > kMaxDepth)
    throw InvalidArgument("StagingPipeline: depth " + std::to_string(depth) + " must be in 1.." +
                          std::to_string(kMaxDepth));
  if (device.is_auto()) throw InvalidArgument("StagingPipeline: resolve the device first (got auto)");
  impl_ = std::make_unique<Impl>(device, depth, capacity, compute_stream);
}

StagingPipeline::~StagingPipeline() = default;  // Impl's destructor waits for the items in flight
StagingPipeline::StagingPipeline(StagingPipeline&&) noexcept = default;
StagingPipeline& StagingPipeline::operator=(StagingPipeline&&) noexcept = default;

void StagingPipeline::enter_device(std::optional<ScopedDevice>& scope) const {
  if (impl_->device_.is_cuda()) scope.emplace(impl_->device_.index());
}
const StagingSlot& StagingPipeline::reserve(StagingBytes bytes) { return impl_->reserve(bytes); }
StreamHandle StagingPipeline::begin_compute(const StagingSlot& slot, StagingBytes bytes) {
  return impl_->begin_compute(slot, bytes);
}
std::uint64_t StagingPipeline::commit(const StagingSlot& slot, StagingBytes bytes) {
  return impl_->commit(slot, bytes);
}
void StagingPipeline::abandon(const StagingSlot&) noexcept { impl_->abandon(); }
const StagingSlot& StagingPipeline::wait_oldest() { return impl_->wait_oldest(); }
std::uint64_t StagingPipeline::release_oldest() { return impl_->release_oldest(); }

void StagingPipeline::drain() {
  std::optional<ScopedDevice> current;
  enter_device(current);
  impl_->drain();
}

int StagingPipeline::in_flight() const { return impl_->count_; }
int StagingPipeline::depth() const { return impl_->depth_; }
std::uint64_t StagingPipeline::next_sequence() const { return impl_->next_sequence_; }
const Device& StagingPipeline::device() const { return impl_->device_; }
StagingBytes StagingPipeline::capacity() const { return impl_->capacity_; }
StreamHandle StagingPipeline::compute_stream() const { return impl_->gpu_ ? impl_->gpu_->compute : nullptr; }

}  // namespace s3d
