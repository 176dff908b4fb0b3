// SgmPipeline on the core's StagingPipeline: the op packs a pair into a slot's pinned input and runs the
// engine on the slot's memory (compute_device on the engine's stream; compute on the CPU), so the ring,
// the copy streams and the events are the core's and this file only checks arguments and lays out a slot.
#include "s3d/stereo/sgm_pipeline.hpp"

#include <cstring>
#include <string>
#include <utility>

#include "s3d/core/errors.hpp"
#include "s3d/core/staging_pipeline.hpp"
#include "s3d/stereo/sgm_memory.hpp"

namespace s3d::stereo {
namespace {

// A slot's bytes: the pair packed at `pixel_bytes` per pixel, and 1 or 2 float output planes.
StagingBytes slot_bytes(std::size_t pixels, std::size_t planes, std::size_t pixel_bytes) {
  return StagingBytes{2 * pixels * pixel_bytes, planes * pixels * sizeof(float)};
}

}  // namespace

// Slot layout: input = left then right image, packed (pitch = width), 8- or 16-bit; output = disparity then
// (with params.confidence) confidence. The staging is declared after the engine so that it is destroyed
// first: its destructor waits on the engine's stream.
class SgmPipeline::Impl {
 public:
  Impl(SgmEngine engine, int depth)
      : engine_(std::move(engine)),
        pixels_(static_cast<std::size_t>(engine_.width()) * engine_.height()),
        planes_(engine_.params().confidence ? 2 : 1),
        staging_(engine_.device(), depth, bytes_for(sizeof(std::uint16_t)), engine_.stream()) {}

  StagingBytes bytes_for(std::size_t pixel_bytes) const { return slot_bytes(pixels_, planes_, pixel_bytes); }

  template <typename T>
  std::uint64_t submit(ImageView<const T> left, ImageView<const T> right) {
    check_pair(left, right);
    const int w = engine_.width(), h = engine_.height();
    auto pack = [&](const StagingSlot& slot) {
      T* dst = reinterpret_cast<T*>(slot.host_in);
      for (ImageView<const T> image : {left, right}) {
        if (image.pitch == w) {
          std::memcpy(dst, image.data, pixels_ * sizeof(T));
        } else {
          for (int y = 0; y < h; ++y) std::memcpy(dst + static_cast<std::size_t>(y) * w, image.row(y), w * sizeof(T));
        }
        dst += pixels_;
      }
    };
    auto compute = [&](const StagingSlot& slot, StreamHandle stream) {
      const T* in_left = reinterpret_cast<const T*>(slot.device_in);
      const ImageView<const T> l{in_left, w, h, w}, r{in_left + pixels_, w, h, w};
      float* disparity = reinterpret_cast<float*>(slot.device_out);
      float* confidence = planes_ == 2 ? disparity + pixels_ : nullptr;
      if (engine_.device().is_cuda()) {
        engine_.compute_device(l, r, ImageView<float>{disparity, w, h, w}, ImageView<float>{confidence, w, h, w},
                               stream);
      } else {
        engine_.compute(l, r, disparity, confidence);
      }
    };
    return staging_.submit(bytes_for(sizeof(T)), pack, compute);
  }

  std::uint64_t retrieve(float* disparity, float* confidence) {
    if (staging_.in_flight() == 0) throw InvalidArgument("SgmPipeline::retrieve: no pair in flight");
    if (!disparity) throw InvalidArgument("SgmPipeline::retrieve: null disparity output");
    return staging_.retrieve([&](const StagingSlot& slot) {
      const float* out = reinterpret_cast<const float*>(slot.host_out);
      std::memcpy(disparity, out, pixels_ * sizeof(float));
      if (confidence && planes_ == 2) std::memcpy(confidence, out + pixels_, pixels_ * sizeof(float));
    });
  }

  SgmEngine engine_;
  std::size_t pixels_;
  std::size_t planes_;  // 1: disparity; 2: disparity + confidence
  StagingPipeline staging_;

 private:
  template <typename T>
  void check_pair(ImageView<const T> l, ImageView<const T> r) const {
    auto size = [](int w, int h) { return std::to_string(w) + "x" + std::to_string(h); };
    const int w = engine_.width(), h = engine_.height();
    if (l.width != w || l.height != h || r.width != w || r.height != h)
      throw InvalidArgument("SgmPipeline::submit: stereo pair " + size(l.width, l.height) + " / " +
                            size(r.width, r.height) + " does not match the pipeline's size " + size(w, h));
    if (!l.data || !r.data) throw InvalidArgument("SgmPipeline::submit: null image data");
    if (l.pitch < l.width || r.pitch < r.width) throw InvalidArgument("SgmPipeline::submit: pitch smaller than width");
    if (staging_.full())
      throw InvalidArgument("SgmPipeline::submit: " + std::to_string(staging_.depth()) +
                            " pairs already in flight (the depth); retrieve one first");
  }
};

SgmPipeline::SgmPipeline(const Device& device, const SgmParams& params, int width, int height, int depth) {
  if (depth < 1 || depth > kMaxDepth)
    throw InvalidArgument("SgmPipeline: depth " + std::to_string(depth) + " must be in 1.." +
                          std::to_string(kMaxDepth));
  impl_ = std::make_unique<Impl>(SgmEngine(device, params, width, height), depth);  // the engine validates
}

SgmPipeline::~SgmPipeline() = default;  // the staging's destructor waits for the pairs in flight
SgmPipeline::SgmPipeline(SgmPipeline&&) noexcept = default;
SgmPipeline& SgmPipeline::operator=(SgmPipeline&&) noexcept = default;

std::uint64_t SgmPipeline::submit(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right) {
  return impl_->submit(left, right);
}

std::uint64_t SgmPipeline::submit(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right) {
  return impl_->submit(left, right);
}

std::uint64_t SgmPipeline::retrieve(float* disparity, float* confidence) {
  return impl_->retrieve(disparity, impl_->planes_ == 2 ? confidence : nullptr);
}

std::uint64_t SgmPipeline::retrieve(SgmResult& result) {
  if (impl_->staging_.in_flight() == 0) throw InvalidArgument("SgmPipeline::retrieve: no pair in flight");
  result.width = impl_->engine_.width();
  result.height = impl_->engine_.height();
  // Copied straight out of the slot (assign, not resize then copy: a fresh 2 MB result is not zeroed first on
  // the thread that feeds the GPUs).
  const std::size_t n = impl_->pixels_;
  const bool confidence = impl_->planes_ == 2;
  return impl_->staging_.retrieve([&](const StagingSlot& slot) {
    const float* out = reinterpret_cast<const float*>(slot.host_out);
    result.disparity.assign(out, out + n);
    if (confidence)
      result.confidence.assign(out + n, out + 2 * n);
    else
      result.confidence.clear();
  });
}

void SgmPipeline::drain() { impl_->staging_.drain(); }

// The staging is sized for 16-bit pairs (8-bit ones use part of it): per slot, host memory (pinned on a
// GPU) and, on a GPU, the same again on the device.
SgmMemory sgm_pipeline_memory(const Device& device, const SgmParams& params, int width, int height, int depth) {
  SgmMemory m = sgm_engine_memory(device, params, width, height);
  const StagingBytes slot =
      slot_bytes(static_cast<std::size_t>(width) * height, params.confidence ? 2 : 1, sizeof(std::uint16_t));
  const std::size_t staged = static_cast<std::size_t>(depth) * (slot.upload + slot.download);
  m.host += staged;
  if (device.is_cuda()) m.device += staged;
  return m;
}

int SgmPipeline::in_flight() const { return impl_->staging_.in_flight(); }
bool SgmPipeline::full() const { return impl_->staging_.full(); }
int SgmPipeline::depth() const { return impl_->staging_.depth(); }
std::uint64_t SgmPipeline::next_sequence() const { return impl_->staging_.next_sequence(); }
const SgmEngine& SgmPipeline::engine() const { return impl_->engine_; }
int SgmPipeline::width() const { return impl_->engine_.width(); }
int SgmPipeline::height() const { return impl_->engine_.height(); }

}  // namespace s3d::stereo
