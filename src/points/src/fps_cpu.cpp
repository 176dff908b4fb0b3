// The CPU FPS backend, the oracle: one cloud at a time (clouds of a batch side by side). Each step updates the
// running minimum d in blocks and keeps each block's maximum; the pick is then the first point holding the
// largest maximum of the first block that has it: the largest d, smallest index among ties (the same answer as
// the fps_key arg-max of point_math.hpp and the CUDA backend: min and max are exact, so the order of the
// reduction cannot change a bit). A large cloud's blocks are split among threads that meet once a step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include <omp.h>

#include "fps_impl.hpp"
#include "point_math.hpp"
#include "step_barrier.hpp"

namespace s3d::points {
namespace detail {
namespace {

constexpr std::int64_t kBlock = 1024;  // points per block: the arg-max scans one block of d, not the cloud
// Threads only for clouds this large: every step ends in a barrier (one thread handles ~1M point-steps per ms).
constexpr std::int64_t kParallelPoints = 1 << 18;  // (the 300,001-point test and the aerial scan cross it)

// Threads that wait longer at the barrier than the work they share takes are slower than one thread: on a
// machine whose cores other processes want, a meeting can wait for a descheduled thread's next time slice, and
// yielding at the barrier does not stop that. The team measures itself over windows of this many steps and
// leaves the rest to thread 0 when it happens.
constexpr int kWindowSteps = 32;

/// One thread's post for a step: its best point (the largest d of its blocks, the smallest index among ties)
/// and how long its share took; thread 0 also posts whether the team goes on.
struct alignas(64) Candidate {
  float d = -1.f;  // below every d (all are >= +0): a thread without blocks never wins
  std::int64_t index = -1;
  double work_s = 0.0;
  bool last_together = false;  // thread 0: the steps after this one run on thread 0 alone
};

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

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

void fps_cpu_cloud(const float* xyz, std::int64_t n, std::int64_t samples, std::int64_t start, std::int32_t* out,
                   std::int64_t alone_after) {
  if (samples <= 0) return;
  const std::size_t count = static_cast<std::size_t>(n);
  std::vector<float> x(count), y(count), z(count), d(count, std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < n; ++i) x[i] = xyz[3 * i], y[i] = xyz[3 * i + 1], z[i] = xyz[3 * i + 2];
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  out[0] = static_cast<std::int32_t>(start);
  const int wanted = n >= kParallelPoints ? std::max(1, omp_get_max_threads()) : 1;
  // Each thread owns a contiguous run of blocks (its d too) and posts its candidate; after one barrier every
  // thread picks the same winner from the posts. Posts alternate between two rows by the step's parity: a
  // thread a step ahead writes the other row while a slow one still reads this one.
  std::vector<Candidate> posts(2 * static_cast<std::size_t>(wanted));
  StepBarrier barrier;
  int team = 1;
#pragma omp parallel num_threads(wanted) if (wanted > 1)
  {
#pragma omp single
    barrier.reset(team = omp_get_num_threads());
    const int t = omp_get_thread_num();
    std::int64_t first = blocks * t / team, last_block = blocks * (t + 1) / team;
    bool together = team > 1, leave_after_this = false;
    double window_work = 0.0, window_wall = 0.0;
    int window = 0;
    std::int64_t pick = start;
    for (std::int64_t s = 1; s < samples; ++s) {
      const float px = x[pick], py = y[pick], pz = z[pick];
      const auto step_start = Clock::now();
      Candidate mine;
      std::int64_t best_block = -1;
      for (std::int64_t b = first; b < last_block; ++b) {
        const float m =
            update_block(x.data(), y.data(), z.data(), d.data(), b * kBlock, std::min(n, (b + 1) * kBlock), px, py, pz);
        if (m > mine.d) mine.d = m, best_block = b;
      }
      if (best_block >= 0) {
        std::int64_t i = best_block * kBlock;
        while (d[i] != mine.d) ++i;  // it is there: the block's maximum is one of its d
        mine.index = i;
      }
      if (!together) {
        pick = mine.index;
        out[s] = static_cast<std::int32_t>(pick);
        continue;
      }
      mine.work_s = seconds_since(step_start);
      mine.last_together = leave_after_this || s == alone_after;
      Candidate* row = posts.data() + (s & 1) * team;
      row[t] = mine;
      barrier.arrive_and_wait();
      int winner = 0;  // the first thread (the smallest indices) with the largest d
      for (int k = 1; k < team; ++k)
        if (row[k].d > row[winner].d) winner = k;
      pick = row[winner].index;
      if (t == 0) out[s] = static_cast<std::int32_t>(pick);
      if (row[0].last_together) {  // every thread reads the same flag after the same step
        if (t != 0) break;
        together = false;
        first = 0, last_block = blocks;
        continue;
      }
      if (t != 0) continue;
      for (int k = 0; k < team; ++k) window_work += row[k].work_s;
      window_wall += seconds_since(step_start);
      if (++window == kWindowSteps) {
        leave_after_this = window_wall > window_work;  // one thread alone would have been faster
        window = 0, window_work = window_wall = 0.0;
      }
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
