#pragma once
// Internal: the backend side of SgmEngine, and the host-memory per-stage wrappers of the CUDA backend.
#include <memory>
#include <vector>

#include "backend.hpp"
#include "s3d/stereo/sgm.hpp"
#include "s3d/stereo/sgm_memory.hpp"
#include "s3d/stereo/stages.hpp"

namespace s3d::stereo {

class SgmEngine::Impl {
 public:
  Impl(const Device& device, const SgmParams& params, int width, int height)
      : device_(device), params_(params), width_(width), height_(height) {}
  virtual ~Impl() = default;
  virtual void compute(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, float* disp, float* conf) = 0;
  virtual void compute(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, float* disp,
                       float* conf) = 0;
  virtual void compute_device(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, ImageView<float> disp,
                              ImageView<float> conf, StreamHandle stream) = 0;
  virtual void compute_device(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, ImageView<float> disp,
                              ImageView<float> conf, StreamHandle stream) = 0;
  virtual StreamHandle stream() const { return nullptr; }
  /// Bytes of the buffers the engine holds (what its constructor allocated).
  virtual SgmMemory allocated() const = 0;

  Device device_;
  SgmParams params_;
  int width_;
  int height_;
};

namespace detail {
std::unique_ptr<SgmEngine::Impl> make_cpu_engine(const Device& device, const SgmParams& params, int width, int height);
std::unique_ptr<SgmEngine::Impl> make_cuda_engine(const Device& device, const SgmParams& params, int width, int height);

/// What each engine allocates, computed from the same sizes its constructor uses (sgm_memory.hpp), beside
/// that constructor: equal to its allocated(), plus (CPU) cpu_compute_scratch_bytes().
SgmMemory cpu_engine_memory(const SgmParams& params, int width, int height);
/// @throws DeviceUnavailable in a build without CUDA.
SgmMemory cuda_engine_memory(const SgmParams& params, int width, int height);
/// CPU compute() scratch beyond the engine's buffers: the row buffers of the two aggregation threads
/// (kept per thread) and the per-row meeting flags of the fused winner-take-all.
std::size_t cpu_compute_scratch_bytes(const SgmParams& params, int width, int height);

/// Host-memory wrappers of single CUDA stages (upload, one stage, download; synchronous).
namespace cuda_host {
template <typename T>
std::vector<std::uint64_t> census(ImageView<const T> image, CensusSpec spec);
std::vector<std::uint16_t> aggregate(const std::vector<std::uint64_t>& ref, const std::vector<std::uint64_t>& target,
                                     const MatchSpec& spec);
void wta(const std::vector<std::uint16_t>& volume, const MatchSpec& spec, std::vector<float>& disparity,
         std::vector<float>* confidence);
std::vector<float> lr_check(const std::vector<float>& left, const std::vector<float>& right, int width, int height,
                            float max_diff);
std::vector<float> median3x3(const std::vector<float>& disparity, int width, int height);
std::vector<float> speckle(const std::vector<float>& disparity, int width, int height, int max_size, float max_diff);
std::vector<float> fill_occlusions(const std::vector<float>& disparity, int width, int height);
}  // namespace cuda_host
}  // namespace detail

}  // namespace s3d::stereo
