// NmsEngine, CPU backend: the host algorithm (nms_cpu.cpp) has no state to keep, and no device-resident API.
#include <memory>

#include "nms_backend.hpp"
#include "nms_engine_impl.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::detection::detail {
namespace {

class CpuEngine final : public NmsEngine::Impl {
 public:
  explicit CpuEngine(const Device& device) : Impl(device) {}

  NmsResult run(const NmsInput& host_input, const NmsParams& params, StreamHandle) override {
    return nms_cpu(host_input, params);
  }
  void run_device_async(const NmsInput&, const NmsParams&, StreamHandle) override {
    throw InvalidArgument("NmsEngine::run_device_async needs a CUDA engine, this one is " + device_.to_string());
  }
  const std::int64_t* device_keep() const override { return nullptr; }
  const float* device_scores() const override { return nullptr; }
  const std::int64_t* device_keep_count() const override { return nullptr; }
  NmsResult download(StreamHandle) const override { throw InvalidArgument("NmsEngine::download needs a CUDA engine"); }
  NmsEngine::Stats last_stats() const override { return {}; }
};

}  // namespace

std::unique_ptr<NmsEngine::Impl> make_cpu_engine(const Device& device) { return std::make_unique<CpuEngine>(device); }

}  // namespace s3d::detection::detail
