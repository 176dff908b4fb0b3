// SgmEngine: the dispatcher (the only place, with stages.cpp, that knows whether CUDA is built).
#include "s3d/stereo/sgm.hpp"

#include <optional>
#include <string>

#include "engine_impl.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/select_backend.hpp"

namespace s3d::stereo {
namespace {

template <typename T>
void check_pair(const SgmEngine::Impl& e, ImageView<const T> l, ImageView<const T> r) {
  auto size = [](int w, int h) { return std::to_string(w) + "x" + std::to_string(h); };
  if (l.width != e.width_ || l.height != e.height_ || r.width != e.width_ || r.height != e.height_)
    throw InvalidArgument("stereo pair " + size(l.width, l.height) + " / " + size(r.width, r.height) +
                          " does not match the engine's size " + size(e.width_, e.height_));
  if (!l.data || !r.data) throw InvalidArgument("stereo pair: null image data");
  if (l.pitch < l.width || r.pitch < r.width) throw InvalidArgument("stereo pair: pitch smaller than width");
}

}  // namespace

SgmEngine::SgmEngine(const Device& device, const SgmParams& params, int width, int height) {
  params.validate(width, height);
  impl_ = select_backend<SgmEngine::Impl>(
      device, "SgmEngine", [&](const Device& d) { return detail::make_cpu_engine(d, params, width, height); },
      S3D_CUDA_FACTORY([&](const Device& d) { return detail::make_cuda_engine(d, params, width, height); }));
}

SgmEngine::~SgmEngine() = default;
SgmEngine::SgmEngine(SgmEngine&&) noexcept = default;
SgmEngine& SgmEngine::operator=(SgmEngine&&) noexcept = default;

namespace {
// The owning-result overloads: size the result for the engine, then fill it through the pointer overload.
template <typename Pixel, typename EngineImpl>
SgmResult compute_into_result(SgmEngine& engine, const EngineImpl& impl, ImageView<const Pixel> left,
                              ImageView<const Pixel> right) {
  SgmResult r;
  r.width = impl.width_;
  r.height = impl.height_;
  r.disparity.resize(static_cast<std::size_t>(r.width) * r.height);
  if (impl.params_.confidence) r.confidence.resize(r.disparity.size());
  engine.compute(left, right, r.disparity.data(), r.confidence.empty() ? nullptr : r.confidence.data());
  return r;
}
}  // namespace

SgmResult SgmEngine::compute(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right) {
  return compute_into_result(*this, *impl_, left, right);
}

SgmResult SgmEngine::compute(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right) {
  return compute_into_result(*this, *impl_, left, right);
}

void SgmEngine::compute(ImageView<const std::uint8_t> left, ImageView<const std::uint8_t> right, float* disparity,
                        float* confidence) {
  check_pair(*impl_, left, right);
  if (!disparity) throw InvalidArgument("SgmEngine::compute: null disparity output");
  impl_->compute(left, right, disparity, impl_->params_.confidence ? confidence : nullptr);
}

void SgmEngine::compute(ImageView<const std::uint16_t> left, ImageView<const std::uint16_t> right, float* disparity,
                        float* confidence) {
  check_pair(*impl_, left, right);
  if (!disparity) throw InvalidArgument("SgmEngine::compute: null disparity output");
  impl_->compute(left, right, disparity, impl_->params_.confidence ? confidence : nullptr);
}

void SgmEngine::compute_device(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, ImageView<float> disp,
                               ImageView<float> conf, StreamHandle stream) {
  check_pair(*impl_, l, r);
  if (disp.width != impl_->width_ || disp.height != impl_->height_ || !disp.data)
    throw InvalidArgument("SgmEngine::compute_device: disparity output size differs from the engine's");
  impl_->compute_device(l, r, disp, conf, stream);
}

void SgmEngine::compute_device(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r,
                               ImageView<float> disp, ImageView<float> conf, StreamHandle stream) {
  check_pair(*impl_, l, r);
  if (disp.width != impl_->width_ || disp.height != impl_->height_ || !disp.data)
    throw InvalidArgument("SgmEngine::compute_device: disparity output size differs from the engine's");
  impl_->compute_device(l, r, disp, conf, stream);
}

StreamHandle SgmEngine::stream() const { return impl_->stream(); }
const SgmParams& SgmEngine::params() const { return impl_->params_; }
const Device& SgmEngine::device() const { return impl_->device_; }
int SgmEngine::width() const { return impl_->width_; }
int SgmEngine::height() const { return impl_->height_; }
SgmMemory SgmEngine::allocated() const { return impl_->allocated(); }

SgmMemory sgm_engine_memory(const Device& device, const SgmParams& params, int width, int height) {
  return device.is_cuda() ? detail::cuda_engine_memory(params, width, height)
                          : detail::cpu_engine_memory(params, width, height);
}

SgmResult compute_sgm(const Device& device, const SgmParams& params, ImageView<const std::uint8_t> left,
                      ImageView<const std::uint8_t> right) {
  SgmEngine engine(device, params, left.width, left.height);
  return engine.compute(left, right);
}

SgmResult compute_sgm(const Device& device, const SgmParams& params, ImageView<const std::uint16_t> left,
                      ImageView<const std::uint16_t> right) {
  SgmEngine engine(device, params, left.width, left.height);
  return engine.compute(left, right);
}

}  // namespace s3d::stereo
