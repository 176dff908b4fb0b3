// NMS dispatcher: validation, device resolution, and the one place that chooses a backend.
#include "s3d/detection/nms.hpp"

#include <cmath>
#include <string>

#include "nms_backend.hpp"
#include "nms_engine_impl.hpp"
#include "nms_math.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/select_backend.hpp"

namespace s3d::detection {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void check_input_shape(const NmsInput& in, const NmsParams& params) {
  S3D_EXPECTS(in.count >= 0 && in.count < (std::int64_t{1} << 31),
              "NmsInput.count must be in [0, 2^31), got " + std::to_string(in.count));
  if (in.count > 0) {
    S3D_EXPECTS(in.boxes != nullptr, "NmsInput.boxes is null");
    S3D_EXPECTS(in.scores != nullptr, "NmsInput.scores is null");
  }
  (void)params;
}

void check_finite(const NmsInput& in, const NmsParams& params) {
  const int dim = params.box_dim();
  for (std::int64_t i = 0; i < in.count; ++i) {
    for (int k = 0; k < dim; ++k) {
      if (!std::isfinite(in.boxes[i * dim + k]))
        throw DataError("box " + std::to_string(i) + " has a non-finite coordinate " + std::to_string(k) + " (" +
                        num(in.boxes[i * dim + k]) + ")");
    }
  }
}

}  // namespace

void NmsParams::validate() const {
  S3D_EXPECTS(iou_threshold >= 0.f && iou_threshold <= 1.f,
              "NmsParams.iou_threshold must be in [0, 1], got " + num(iou_threshold));
  S3D_EXPECTS(!(suppress_at_equal && iou_threshold == 0.f),
              "NmsParams.iou_threshold must be > 0 with suppress_at_equal (IoU >= 0 would suppress every box)");
  S3D_EXPECTS(pixel_offset == 0 || pixel_offset == 1,
              "NmsParams.pixel_offset must be 0 or 1, got " + std::to_string(pixel_offset));
  S3D_EXPECTS(!(rotated && pixel_offset != 0), "NmsParams.pixel_offset must be 0 for rotated boxes");
  S3D_EXPECTS(method == NmsMethod::kHard || method == NmsMethod::kSoftLinear || method == NmsMethod::kSoftGaussian,
              "NmsParams.method is not a known NmsMethod");
  S3D_EXPECTS(std::isfinite(sigma) && sigma > 0.f, "NmsParams.sigma must be finite and > 0, got " + num(sigma));
  S3D_EXPECTS(std::isfinite(soft_min_score) && soft_min_score >= 0.f,
              "NmsParams.soft_min_score must be finite and >= 0, got " + num(soft_min_score));
  S3D_EXPECTS(!std::isnan(min_score), "NmsParams.min_score must not be NaN");
  S3D_EXPECTS(pre_top_k >= 0, "NmsParams.pre_top_k must be >= 0 (0 = all), got " + std::to_string(pre_top_k));
  S3D_EXPECTS(max_dets >= 0, "NmsParams.max_dets must be >= 0 (0 = unlimited), got " + std::to_string(max_dets));
}

float nms_iou(const float* a, const float* b, const NmsParams& params) {
  if (params.rotated) return detail::rot_iou(detail::make_rot_box(a), detail::make_rot_box(b));
  return detail::axis_iou(detail::make_axis_box(a, params.pixel_offset), detail::make_axis_box(b, params.pixel_offset),
                          params.pixel_offset);
}

NmsEngine::NmsEngine(const Device& device)
    : impl_(select_backend<Impl>(
          device, "NmsEngine", [](const Device& d) { return detail::make_cpu_engine(d); },
          S3D_CUDA_FACTORY([](const Device& d) { return detail::make_cuda_engine(d); }))) {}
NmsEngine::~NmsEngine() = default;
NmsEngine::NmsEngine(NmsEngine&&) noexcept = default;
NmsEngine& NmsEngine::operator=(NmsEngine&&) noexcept = default;

const Device& NmsEngine::device() const { return impl_->device_; }

NmsResult NmsEngine::run(const NmsInput& host_input, const NmsParams& params, StreamHandle stream) {
  params.validate();
  check_input_shape(host_input, params);
  check_finite(host_input, params);
  return impl_->run(host_input, params, stream);
}

void NmsEngine::run_device_async(const NmsInput& device_input, const NmsParams& params, StreamHandle stream) {
  params.validate();
  check_input_shape(device_input, params);
  impl_->run_device_async(device_input, params, stream);
}

const std::int64_t* NmsEngine::device_keep() const { return impl_->device_keep(); }
const float* NmsEngine::device_scores() const { return impl_->device_scores(); }
const std::int64_t* NmsEngine::device_keep_count() const { return impl_->device_keep_count(); }
NmsResult NmsEngine::download(StreamHandle stream) const { return impl_->download(stream); }
NmsEngine::Stats NmsEngine::last_stats() const { return impl_->last_stats(); }

NmsResult nms(const Device& device, const NmsInput& input, const NmsParams& params) {
  NmsEngine engine(device);  // a CPU engine keeps no state: as cheap as the host algorithm called directly
  return engine.run(input, params);
}

}  // namespace s3d::detection
