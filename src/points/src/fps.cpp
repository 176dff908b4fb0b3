// FpsEngine: validation and the one place that chooses a backend.
#include "s3d/points/fps.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "fps_impl.hpp"
#include "point_checks.hpp"
#include "s3d/core/config.hpp"
#include "s3d/core/errors.hpp"
#include "s3d/core/scoped_device.hpp"
#include "s3d/core/select_backend.hpp"

namespace s3d::points {

void FpsBatch::validate() const {
  S3D_EXPECTS(!lengths.empty(), "FpsBatch: no clouds");
  S3D_EXPECTS(samples.size() == lengths.size(), "FpsBatch: " + std::to_string(samples.size()) + " sample counts for " +
                                                    std::to_string(lengths.size()) + " clouds");
  S3D_EXPECTS(
      starts.empty() || starts.size() == lengths.size(),
      "FpsBatch: " + std::to_string(starts.size()) + " starts for " + std::to_string(lengths.size()) + " clouds");
  std::int64_t total = 0;
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    const std::string cloud = "FpsBatch cloud " + std::to_string(b) + ": ";
    S3D_EXPECTS(lengths[b] >= 1 && lengths[b] < (std::int64_t{1} << 31),
                cloud + "length must be in [1, 2^31), got " + std::to_string(lengths[b]));
    S3D_EXPECTS(
        samples[b] >= 0 && samples[b] <= lengths[b],
        cloud + "samples must be in [0, " + std::to_string(lengths[b]) + "], got " + std::to_string(samples[b]));
    if (!starts.empty())
      S3D_EXPECTS(starts[b] >= 0 && starts[b] < lengths[b],
                  cloud + "start must be in [0, " + std::to_string(lengths[b]) + "), got " + std::to_string(starts[b]));
    total += lengths[b];
    S3D_EXPECTS(total < (std::int64_t{1} << 40), "FpsBatch: more than 2^40 points");
  }
  S3D_EXPECTS(xyz != nullptr, "FpsBatch: null xyz");
}

std::int64_t FpsBatch::total_samples() const {
  std::int64_t total = 0;
  for (std::int64_t m : samples) total += m;
  return total;
}

FpsEngine::FpsEngine(const Device& device) {
  impl_ = select_backend<FpsEngine::Impl>(
      device, "FpsEngine", [&](const Device& d) { return detail::make_cpu_fps(d); },
      S3D_CUDA_FACTORY([&](const Device& d) { return detail::make_cuda_fps(d); }));
}

FpsEngine::~FpsEngine() = default;
FpsEngine::FpsEngine(FpsEngine&&) noexcept = default;
FpsEngine& FpsEngine::operator=(FpsEngine&&) noexcept = default;

const Device& FpsEngine::device() const { return impl_->device_; }

std::vector<std::int32_t> FpsEngine::run(PointsView<const float> cloud, std::int64_t samples, std::int64_t start) {
  FpsBatch batch;
  batch.xyz = cloud.xyz;
  batch.lengths = {static_cast<std::int64_t>(cloud.size)};
  batch.samples = {samples};
  batch.starts = {start};
  return run(batch);
}

std::vector<std::int32_t> FpsEngine::run(const FpsBatch& batch) {
  batch.validate();
  std::int64_t points = 0;
  for (std::int64_t n : batch.lengths) points += n;
  detail::check_finite({batch.xyz, static_cast<std::size_t>(points)}, "FPS points");
  return impl_->run_host(batch);
}

std::vector<std::vector<std::int32_t>> FpsEngine::run_each(const std::vector<PointsView<const float>>& clouds,
                                                           const std::vector<std::int64_t>& samples,
                                                           const std::vector<std::int64_t>& starts) {
  FpsBatch batch;
  std::size_t floats = 0;
  for (const auto& c : clouds) floats += 3 * c.size;
  std::vector<float> xyz;
  xyz.reserve(floats);
  for (const auto& c : clouds) {
    xyz.insert(xyz.end(), c.xyz, c.xyz + 3 * c.size);
    batch.lengths.push_back(static_cast<std::int64_t>(c.size));
  }
  batch.xyz = xyz.data();
  batch.samples = samples;
  batch.starts = starts;
  const std::vector<std::int32_t> all = run(batch);
  std::vector<std::vector<std::int32_t>> each(clouds.size());
  auto from = all.begin();
  for (std::size_t b = 0; b < clouds.size(); ++b) {
    each[b].assign(from, from + samples[b]);
    from += samples[b];
  }
  return each;
}

void FpsEngine::run_device_async(const FpsBatch& batch, std::int32_t* device_out, StreamHandle stream) {
  batch.validate();
  S3D_EXPECTS(impl_->device_.is_cuda(), "FpsEngine::run_device_async needs a CUDA engine");
  S3D_EXPECTS(device_out != nullptr || batch.total_samples() == 0, "FpsEngine::run_device_async: null output");
  impl_->run_device_async(batch, device_out, stream);
}

std::int64_t samples_for_ratio(double ratio, std::int64_t n) {
  S3D_EXPECTS(ratio > 0.0 && ratio <= 1.0, "samples_for_ratio: ratio must be in (0, 1], got " + std::to_string(ratio));
  S3D_EXPECTS(n >= 1, "samples_for_ratio: the cloud has no point");
  const double x = ratio * static_cast<double>(n);
  const double whole = std::round(x);
  const double m = std::fabs(x - whole) <= 1e-9 * std::max(1.0, x) ? whole : std::ceil(x);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(m));
}

std::int64_t seeded_start(std::uint64_t seed, std::uint64_t item, std::int64_t n) {
  S3D_EXPECTS(n >= 1, "seeded_start: the cloud has no point");
  std::uint64_t x = seed + item + 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::int64_t>((x ^ (x >> 31)) % static_cast<std::uint64_t>(n));
}

std::vector<std::int32_t> farthest_point_sampling(const Device& device, PointsView<const float> cloud,
                                                  std::int64_t samples, std::int64_t start) {
  FpsEngine engine(device);
  return engine.run(cloud, samples, start);
}

}  // namespace s3d::points
