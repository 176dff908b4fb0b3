// SgmEngine, CPU backend: buffers allocated once, stages run in order (see sgm.hpp).
#include <atomic>
#include <cstring>
#include <vector>

#include "engine_impl.hpp"
#include "median_math.hpp"
#include "s3d/core/errors.hpp"

namespace s3d::stereo::detail {
namespace {

class CpuEngine final : public SgmEngine::Impl {
 public:
  CpuEngine(const Device& device, const SgmParams& params, int width, int height)
      : Impl(device, params, width, height) {
    const std::size_t n = static_cast<std::size_t>(width) * height;
    const std::size_t nd = n * params.disparities;
    census_left_.resize(n);
    census_right_.resize(n);
    cost_.resize(nd);
    volume_.resize(nd);
    disp_.resize(n);
    if (params.lr_check) disp_right_.resize(n);
    if (params.speckle_size > 0) scratch_.resize(2 * n);
  }

  void compute(ImageView<const std::uint8_t> l, ImageView<const std::uint8_t> r, float* disp, float* conf) override {
    run(l, r, disp, conf);
  }
  SgmMemory allocated() const override {
    auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
    return {bytes(census_left_) + bytes(census_right_) + bytes(cost_) + bytes(volume_) + bytes(disp_) +
                bytes(disp_right_) + bytes(scratch_),
            0};
  }
  void compute(ImageView<const std::uint16_t> l, ImageView<const std::uint16_t> r, float* disp, float* conf) override {
    run(l, r, disp, conf);
  }
  void compute_device(ImageView<const std::uint8_t>, ImageView<const std::uint8_t>, ImageView<float>, ImageView<float>,
                      StreamHandle) override {
    throw InvalidArgument("SgmEngine::compute_device needs a CUDA engine (this one runs on the CPU)");
  }
  void compute_device(ImageView<const std::uint16_t>, ImageView<const std::uint16_t>, ImageView<float>,
                      ImageView<float>, StreamHandle) override {
    throw InvalidArgument("SgmEngine::compute_device needs a CUDA engine (this one runs on the CPU)");
  }

 private:
  template <typename T>
  void run(ImageView<const T> left, ImageView<const T> right, float* out_disp, float* out_conf) {
    const SgmParams& p = params_;
    const int W = width_, H = height_;
    const std::size_t n = static_cast<std::size_t>(W) * H;
    const CensusSpec cs{p.census, p.census_width, p.census_height};
    cpu::census(left, cs, census_left_.data());
    cpu::census(right, cs, census_right_.data());
    const MatchSpec sl = make_match_spec(p, W, H, false);
    cpu::cost_volume(census_left_.data(), census_right_.data(), sl, cost_.data());
    float* conf = p.confidence ? out_conf : nullptr;
    const bool lr_volume = p.lr_check && p.lr_method == LrMethod::kVolume;
    cpu::aggregate_wta(cost_.data(), sl, volume_.data(), disp_.data(), conf, lr_volume ? disp_right_.data() : nullptr);
    if (p.lr_check && !lr_volume) {  // LrMethod::kRightSgm: the right view's own SGM run
      const MatchSpec sr = make_match_spec(p, W, H, true);
      cpu::cost_volume(census_right_.data(), census_left_.data(), sr, cost_.data());
      cpu::aggregate_wta(cost_.data(), sr, volume_.data(), disp_right_.data(), nullptr);
    }
    if (p.lr_check) cpu::lr_check(disp_.data(), disp_right_.data(), W, H, p.lr_max_diff);
    const float* cur = disp_.data();
    if (p.median) {
      cpu::median3x3(disp_.data(), out_disp, W, H);
    } else {
      std::memcpy(out_disp, cur, n * sizeof(float));
    }
    if (p.speckle_size > 0) cpu::speckle(out_disp, W, H, p.speckle_size, p.speckle_range, scratch_.data());
    if (conf) {
      for (std::size_t i = 0; i < n; ++i)
        if (!finite_disparity(out_disp[i])) conf[i] = 0.0f;
    }
    if (p.fill) cpu::fill_occlusions(out_disp, W, H);  // after the confidence mask: filled pixels keep 0
  }

  std::vector<std::uint64_t> census_left_, census_right_;
  std::vector<std::uint8_t> cost_;
  std::vector<std::uint16_t> volume_;
  std::vector<float> disp_, disp_right_;
  std::vector<int> scratch_;
};

}  // namespace

// The constructor's sizes: census codes (2n uint64), costs and partial sums (nD uint8 + nD uint16), the
// disparity, the right view's (LR check) and the speckle labels (2n int).
SgmMemory cpu_engine_memory(const SgmParams& params, int width, int height) {
  const std::size_t n = static_cast<std::size_t>(width) * height;
  const std::size_t nd = n * static_cast<std::size_t>(params.disparities);
  std::size_t host =
      2 * n * sizeof(std::uint64_t) + nd * (sizeof(std::uint8_t) + sizeof(std::uint16_t)) + n * sizeof(float);
  if (params.lr_check) host += n * sizeof(float);
  if (params.speckle_size > 0) host += 2 * n * sizeof(int);
  return {host + cpu_compute_scratch_bytes(params, width, height), 0};
}

std::size_t cpu_compute_scratch_bytes(const SgmParams& params, int width, int height) {
  const std::size_t threads = 2;  // aggregate_wta runs its two sweeps on at most two threads
  return threads * cpu::sweep_buffer_bytes(make_match_spec(params, width, height, false)) +
         2 * static_cast<std::size_t>(height) * sizeof(std::atomic<int>);
}

std::unique_ptr<SgmEngine::Impl> make_cpu_engine(const Device& device, const SgmParams& params, int width, int height) {
  return std::make_unique<CpuEngine>(device, params, width, height);
}

}  // namespace s3d::stereo::detail
