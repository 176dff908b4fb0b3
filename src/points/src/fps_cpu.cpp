// The CPU FPS backend, the oracle: one cloud at a time, each step an OpenMP arg-max over the points (or
// clouds in parallel when a batch has several).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fps_impl.hpp"
#include "point_math.hpp"

namespace s3d::points {
namespace detail {

void fps_cpu_cloud(const float* xyz, std::int64_t n, std::int64_t samples, std::int64_t start, std::int32_t* out) {
  if (samples <= 0) return;
  std::vector<float> d(static_cast<std::size_t>(n), std::numeric_limits<float>::infinity());
  std::int64_t last = start;
  out[0] = static_cast<std::int32_t>(start);
  for (std::int64_t s = 1; s < samples; ++s) {
    const float px = xyz[3 * last], py = xyz[3 * last + 1], pz = xyz[3 * last + 2];
    std::uint64_t best = 0;
#pragma omp parallel if (n >= 32768)
    {
      std::uint64_t local = 0;
#pragma omp for schedule(static) nowait
      for (std::int64_t i = 0; i < n; ++i) {
        const float nd = squared_distance(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2], px, py, pz);
        const float di = std::min(d[i], nd);
        d[i] = di;
        local = std::max(local, fps_key(di, static_cast<std::uint32_t>(i)));
      }
#pragma omp critical(s3d_fps_argmax)
      best = std::max(best, local);
    }
    last = fps_key_index(best);
    out[s] = static_cast<std::int32_t>(last);
  }
}

}  // namespace detail

namespace {

class CpuFps final : public FpsEngine::Impl {
 public:
  using Impl::Impl;

  std::vector<std::int32_t> run_host(const FpsBatch& batch) override {
    const std::size_t clouds = batch.lengths.size();
    std::vector<std::int64_t> point_offset(clouds + 1, 0), out_offset(clouds + 1, 0);
    for (std::size_t b = 0; b < clouds; ++b) {
      point_offset[b + 1] = point_offset[b] + batch.lengths[b];
      out_offset[b + 1] = out_offset[b] + batch.samples[b];
    }
    std::vector<std::int32_t> out(static_cast<std::size_t>(out_offset[clouds]));
    // Small clouds run side by side; a large one parallelises its own steps (nested regions stay serial).
#pragma omp parallel for schedule(dynamic) if (clouds > 1)
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(clouds); ++b) {
      detail::fps_cpu_cloud(batch.xyz + 3 * point_offset[b], batch.lengths[b], batch.samples[b],
                            batch.starts.empty() ? 0 : batch.starts[b], out.data() + out_offset[b]);
    }
    return out;
  }

  void run_device_async(const FpsBatch&, std::int32_t*, StreamHandle) override {}
};

}  // namespace

namespace detail {
std::unique_ptr<FpsEngine::Impl> make_cpu_fps(const Device& device) { return std::make_unique<CpuFps>(device); }
}  // namespace detail

}  // namespace s3d::points
