// FpsPipeline on the core's StagingPipeline: a slot's input is the batch's points back to back (float x y z),
// its output the batch's indices; the compute is FpsEngine::run_device_async on the slot's device memory (on
// the CPU, FpsEngine::run on the slot's host memory).
#include "s3d/points/fps_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <string>

#include "point_checks.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/staging_pipeline.hpp"
#include "s3d/points/fps.hpp"

namespace s3d::points {

class FpsPipeline::Impl {
 public:
  Impl(const Device& device, int depth) : engine_(device), depth_(depth) {
    S3D_EXPECTS(depth >= 1 && depth <= StagingPipeline::kMaxDepth, "FpsPipeline: depth must be in [1, 16]");
  }

  bool fits(const std::vector<PointsView<const float>>& clouds) const {
    if (staging_ && staging_->full()) return false;
    return in_flight() == 0 || bytes_of(clouds).upload <= capacity_.upload;
  }

  void submit(const std::vector<PointsView<const float>>& clouds, const std::vector<std::int64_t>& samples,
              const std::vector<std::int64_t>& starts) {
    FpsBatch batch;
    for (const auto& c : clouds) batch.lengths.push_back(static_cast<std::int64_t>(c.size));
    batch.samples = samples;
    batch.starts = starts;
    batch.xyz = clouds.empty() ? nullptr : clouds.front().xyz;  // the slot's pointer replaces it below
    batch.validate();
    S3D_EXPECTS(fits(clouds), "FpsPipeline::submit: no room (retrieve first)");
    check_all_finite(clouds);
    const StagingBytes bytes = bytes_of(clouds, batch.total_samples());
    if (!staging_ || bytes.upload > capacity_.upload || bytes.download > capacity_.download) grow(bytes);
    auto pack = [&](const StagingSlot& slot) {
      float* out = reinterpret_cast<float*>(slot.host_in);
      std::vector<std::size_t> offsets(clouds.size());
      std::size_t at = 0;
      for (std::size_t b = 0; b < clouds.size(); ++b) offsets[b] = at, at += 3 * clouds[b].size;
        // One memcpy per cloud, several clouds at once: pinned memory is written at the memory's speed, not one
        // core's.
#pragma omp parallel for schedule(dynamic, 1)
      for (std::ptrdiff_t b = 0; b < static_cast<std::ptrdiff_t>(clouds.size()); ++b)
        std::memcpy(out + offsets[b], clouds[b].xyz, 3 * clouds[b].size * sizeof(float));
    };
    auto compute = [&](const StagingSlot& slot, StreamHandle stream) {
      FpsBatch on_slot = batch;
      on_slot.xyz = reinterpret_cast<const float*>(slot.device_in);
      auto* out = reinterpret_cast<std::int32_t*>(slot.device_out);
      if (engine_.device().is_cuda()) {
        engine_.run_device_async(on_slot, out, stream);
      } else {
        const std::vector<std::int32_t> indices = engine_.run(on_slot);
        std::memcpy(out, indices.data(), indices.size() * sizeof(std::int32_t));
      }
    };
    staging_->submit(bytes, pack, compute);
    queued_.push_back(samples);
  }

  std::vector<std::vector<std::int32_t>> retrieve() {
    S3D_EXPECTS(in_flight() > 0, "FpsPipeline::retrieve: nothing in flight");
    const std::vector<std::int64_t> samples = queued_.front();
    std::vector<std::vector<std::int32_t>> each(samples.size());
    staging_->retrieve([&](const StagingSlot& slot) {
      const auto* from = reinterpret_cast<const std::int32_t*>(slot.host_out);
      for (std::size_t b = 0; b < samples.size(); ++b) {
        each[b].assign(from, from + samples[b]);
        from += samples[b];
      }
    });
    queued_.pop_front();
    return each;
  }

  void drain() {
    if (staging_) staging_->drain();
    queued_.clear();
  }

  int in_flight() const { return staging_ ? staging_->in_flight() : 0; }
  bool full() const { return staging_ && staging_->full(); }
  const Device& device() const { return engine_.device(); }

 private:
  static StagingBytes bytes_of(const std::vector<PointsView<const float>>& clouds, std::int64_t samples = 0) {
    std::size_t points = 0;
    for (const auto& c : clouds) points += c.size;
    return StagingBytes{3 * points * sizeof(float), static_cast<std::size_t>(samples) * sizeof(std::int32_t)};
  }

  static void check_all_finite(const std::vector<PointsView<const float>>& clouds) {
    std::exception_ptr first;  // the lowest cloud's error, whichever thread finds it
    std::ptrdiff_t first_cloud = static_cast<std::ptrdiff_t>(clouds.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (std::ptrdiff_t b = 0; b < static_cast<std::ptrdiff_t>(clouds.size()); ++b) {
      try {
        detail::check_finite(clouds[b], ("FPS cloud " + std::to_string(b)).c_str());
      } catch (...) {
#pragma omp critical(s3d_fps_pipeline_finite)
        if (b < first_cloud) first_cloud = b, first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

  // Slots for `bytes` (with headroom, so that batches of slightly different sizes reuse them); only with
  // nothing in flight (fits() says so), so no batch is lost.
  void grow(const StagingBytes& bytes) {
    S3D_EXPECTS(in_flight() == 0, "FpsPipeline: larger slots needed while batches are in flight");
    capacity_.upload = std::max(capacity_.upload, bytes.upload + bytes.upload / 8);
    // At most one index per point: a batch whose points fit fits its indices too.
    capacity_.download = std::max(capacity_.download, capacity_.upload / 3 + sizeof(std::int32_t));
    staging_.reset();
    staging_ = std::make_unique<StagingPipeline>(engine_.device(), depth_, capacity_);
  }

  FpsEngine engine_;
  int depth_;
  StagingBytes capacity_;
  std::unique_ptr<StagingPipeline> staging_;
  std::deque<std::vector<std::int64_t>> queued_;  // each batch in flight's sample counts
};

FpsPipeline::FpsPipeline(const Device& device, int depth) : impl_(std::make_unique<Impl>(device, depth)) {}
FpsPipeline::~FpsPipeline() = default;
FpsPipeline::FpsPipeline(FpsPipeline&&) noexcept = default;
FpsPipeline& FpsPipeline::operator=(FpsPipeline&&) noexcept = default;

bool FpsPipeline::fits(const std::vector<PointsView<const float>>& clouds) const { return impl_->fits(clouds); }
void FpsPipeline::submit(const std::vector<PointsView<const float>>& clouds, const std::vector<std::int64_t>& samples,
                         const std::vector<std::int64_t>& starts) {
  impl_->submit(clouds, samples, starts);
}
std::vector<std::vector<std::int32_t>> FpsPipeline::retrieve() { return impl_->retrieve(); }
void FpsPipeline::drain() { impl_->drain(); }
int FpsPipeline::in_flight() const { return impl_->in_flight(); }
bool FpsPipeline::full() const { return impl_->full(); }
const Device& FpsPipeline::device() const { return impl_->device(); }

}  // namespace s3d::points
