// The CPU FPS backend, the oracle: one cloud at a time (clouds of a batch side by side). Each step updates the
// running minimum d in blocks and keeps each block's maximum; the pick is then the first point holding the
// largest maximum of the first block that has it: the largest d, smallest index among ties (the same answer as
// the fps_key arg-max of point_math.hpp and the CUDA backend: min and max are exact, so the order of the
// reduction cannot change a bit).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fps_impl.hpp"
#include "point_math.hpp"

namespace s3d::points {
namespace detail {
namespace {

constexpr std::int64_t kBlock = 1024;  // points per block: the arg-max scans one block of d, not the cloud
// Threads only for clouds this large: every step ends in a barrier, and on a loaded machine a descheduled
// thread stalls it for a time slice (bunny 35,947 -> 4,096 took 40 s on 2 threads of a busy 2-core machine
// with a barrier per step, 0.9 s on one); one thread handles ~1M point-steps per ms.
constexpr std::int64_t kParallelPoints = 1 << 18;  // (the 300,001-point test and the aerial scan cross it)

/// d = min(d, |p - pick|^2) over [lo, hi); returns the largest d there. SoA and `omp simd` so that it
/// vectorises; the distance is squared_distance's expression, written out so that the compiler sees it.
float update_block(const float* x, const float* y, const float* z, float* d, std::int64_t lo, std::int64_t hi, float px,
                   float py, float pz) {
  float m = 0.f;  // every d is >= +0
#pragma omp simd reduction(max : m)
  for (std::int64_t i = lo; i < hi; ++i) {
    const float dx = x[i] - px, dy = y[i] - py, dz = z[i] - pz;
    const float nd = ((dx * dx) + (dy * dy)) + (dz * dz);
    const float di = nd < d[i] ? nd : d[i];
    d[i] = di;
    m = m > di ? m : di;
  }
  return m;
}

}  // namespace

void fps_cpu_cloud(const float* xyz, std::int64_t n, std::int64_t samples, std::int64_t start, std::int32_t* out) {
  if (samples <= 0) return;
  const std::size_t count = static_cast<std::size_t>(n);
  std::vector<float> x(count), y(count), z(count), d(count, std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < n; ++i) x[i] = xyz[3 * i], y[i] = xyz[3 * i + 1], z[i] = xyz[3 * i + 2];
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<float> block_max(static_cast<std::size_t>(blocks));
  std::int64_t last = start;
  out[0] = static_cast<std::int32_t>(start);
#pragma omp parallel if (n >= kParallelPoints)
  for (std::int64_t s = 1; s < samples; ++s) {
    const float px = x[last], py = y[last], pz = z[last];
#pragma omp for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b)
      block_max[b] =
          update_block(x.data(), y.data(), z.data(), d.data(), b * kBlock, std::min(n, (b + 1) * kBlock), px, py, pz);
#pragma omp single
    {
      std::int64_t best = 0;  // the first block with the largest maximum
      for (std::int64_t b = 1; b < blocks; ++b)
        if (block_max[b] > block_max[best]) best = b;
      std::int64_t i = best * kBlock;
      while (d[i] != block_max[best]) ++i;  // it is there: the block's maximum is one of its d
      last = i;
      out[s] = static_cast<std::int32_t>(i);
    }
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
