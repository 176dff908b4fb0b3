// SgmPipeline: the dispatcher (argument checks, FIFO of slots, sequence numbers) and the CPU backend,
// which has nothing to overlap: it computes inside submit() and keeps the result in the slot.
#include "s3d/stereo/sgm_pipeline.hpp"

#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "sgm_pipeline_impl.hpp"

namespace s3d::stereo {
namespace {

class CpuPipeline final : public SgmPipeline::Impl {
 public:
  CpuPipeline(SgmEngine engine, int depth) : Impl(std::move(engine), depth) {
    const std::size_t n = static_cast<std::size_t>(engine_.width()) * engine_.height();
    disparity_.assign(depth, std::vector<float>(n));
    if (engine_.params().confidence) confidence_.assign(depth, std::vector<float>(n));
  }
  void submit(int slot, ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r) override { run(slot, l, r); }
  void submit(int slot, ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r) override { run(slot, l, r); }
  void retrieve(int slot, float* disparity, float* confidence) override {
    const auto& d = disparity_[slot];
    std::memcpy(disparity, d.data(), d.size() * sizeof(float));
    if (confidence && !confidence_.empty())
      std::memcpy(confidence, confidence_[slot].data(), d.size() * sizeof(float));
  }
  void wait(int) override {}

 private:
  template <typename T>
  void run(int slot, ImageView<const T> l, ImageView<const T> r) {
    engine_.compute(l, r, disparity_[slot].data(), confidence_.empty() ? nullptr : confidence_[slot].data());
  }
  std::vector<std::vector<float>> disparity_, confidence_;  // [slot][pixel]
};

template <typename T>
void check_pair(const SgmPipeline::Impl& p, ImageView<const T> l, ImageView<const T> r) {
  auto size = [](int w, int h) { return std::to_string(w) + "x" + std::to_string(h); };
  const int w = p.engine_.width(), h = p.engine_.height();
  if (l.width != w || l.height != h || r.width != w || r.height != h)
    throw InvalidArgument("SgmPipeline::submit: stereo pair " + size(l.width, l.height) + " / " +
                          size(r.width, r.height) + " does not match the pipeline's size " + size(w, h));
  if (!l.data || !r.data) throw InvalidArgument("SgmPipeline::submit: null image data");
  if (l.pitch < l.width || r.pitch < r.width) throw InvalidArgument("SgmPipeline::submit: pitch smaller than width");
  if (p.count_ == p.depth_)
    throw InvalidArgument("SgmPipeline::submit: " + std::to_string(p.depth_) +
                          " pairs already in flight (the depth); retrieve one first");
}

template <typename T>
std::uint64_t submit_pair(SgmPipeline::Impl& p, ImageView<const T> l, ImageView<const T> r) {
  check_pair(p, l, r);
  p.submit((p.oldest_ + p.count_) % p.depth_, l, r);
  ++p.count_;
  return p.next_sequence_++;
}

}  // namespace

SgmPipeline::SgmPipeline(const Device& device, const SgmParams& params, int width, int height, int depth) {
  if (depth < 1 || depth > kMaxDepth)
    throw InvalidArgument("SgmPipeline: depth " + std::to_string(depth) + " must be in 1.." + std::to_string(kMaxDepth));
  SgmEngine engine(device, params, width, height);  // validates, resolves `auto`
  if (engine.device().is_cuda()) {
#if S3D_WITH_CUDA
    impl_ = detail::make_cuda_pipeline(std::move(engine), depth);
#else
    throw DeviceUnavailable("SgmPipeline: CUDA is not built into this s3d");
#endif
  } else {
    impl_ = std::make_unique<CpuPipeline>(std::move(engine), depth);
  }
}

SgmPipeline::~SgmPipeline() = default;  // the backend's destructor waits for the pairs in flight
SgmPipeline::SgmPipeline(SgmPipeline&&) noexcept = default;
SgmPipeline& SgmPipeline::operator=(SgmPipeline&&) noexcept = default;

std::uint64_t SgmPipeline::submit(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right) {
  return submit_pair(*impl_, left, right);
}

std::uint64_t SgmPipeline::submit(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right) {
  return submit_pair(*impl_, left, right);
}

std::uint64_t SgmPipeline::retrieve(float* disparity, float* confidence) {
  Impl& p = *impl_;
  if (p.count_ == 0) throw InvalidArgument("SgmPipeline::retrieve: no pair in flight");
  if (!disparity) throw InvalidArgument("SgmPipeline::retrieve: null disparity output");
  p.retrieve(p.oldest_, disparity, p.engine_.params().confidence ? confidence : nullptr);
  p.oldest_ = (p.oldest_ + 1) % p.depth_;
  --p.count_;
  return p.next_sequence_ - static_cast<std::uint64_t>(p.count_) - 1;
}

std::uint64_t SgmPipeline::retrieve(SgmResult& result) {
  if (impl_->count_ == 0) throw InvalidArgument("SgmPipeline::retrieve: no pair in flight");
  result.width = impl_->engine_.width();
  result.height = impl_->engine_.height();
  result.disparity.resize(static_cast<std::size_t>(result.width) * result.height);
  if (impl_->engine_.params().confidence) result.confidence.resize(result.disparity.size());
  else result.confidence.clear();
  return retrieve(result.disparity.data(), result.confidence.empty() ? nullptr : result.confidence.data());
}

void SgmPipeline::drain() {
  Impl& p = *impl_;
  std::exception_ptr first;
  while (p.count_ > 0) {
    try {
      p.wait(p.oldest_);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    p.oldest_ = (p.oldest_ + 1) % p.depth_;
    --p.count_;
  }
  if (first) std::rethrow_exception(first);
}

int SgmPipeline::in_flight() const { return impl_->count_; }
bool SgmPipeline::full() const { return impl_->count_ == impl_->depth_; }
int SgmPipeline::depth() const { return impl_->depth_; }
std::uint64_t SgmPipeline::next_sequence() const { return impl_->next_sequence_; }
const SgmEngine& SgmPipeline::engine() const { return impl_->engine_; }
int SgmPipeline::width() const { return impl_->engine_.width(); }
int SgmPipeline::height() const { return impl_->engine_.height(); }

}  // namespace s3d::stereo
