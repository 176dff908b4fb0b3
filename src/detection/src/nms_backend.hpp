#pragma once
// Private interface between the NMS dispatcher (nms.cpp) and its backends (nms_cpu.cpp, nms_cuda.cu).
#include <cstdint>
#include <memory>

#include "s3d/core/stream.hpp"
#include "s3d/detection/nms.hpp"

namespace s3d::detection::detail {

/// The CPU backend: host inputs (already validated), host result.
NmsResult nms_cpu(const NmsInput& input, const NmsParams& params);

/// The CUDA backend of one engine (defined in nms_cuda.cu; used only when S3D_WITH_CUDA).
class NmsCuda {
 public:
  explicit NmsCuda(int device_index);
  ~NmsCuda();
  NmsCuda(const NmsCuda&) = delete;
  NmsCuda& operator=(const NmsCuda&) = delete;

  NmsResult run_host(const NmsInput& host_input, const NmsParams& params, StreamHandle stream);
  void run_device(const NmsInput& device_input, const NmsParams& params, StreamHandle stream);
  const std::int64_t* keep() const;
  const float* scores() const;
  const std::int64_t* keep_count() const;
  NmsResult download(StreamHandle stream) const;
  NmsEngine::Stats stats() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace s3d::detection::detail
