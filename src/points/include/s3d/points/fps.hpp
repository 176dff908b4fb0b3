#pragma once
// Farthest point sampling (FPS), exact, on the CPU and on CUDA with identical indices.
//
// Semantics (docs/PC-SAMPLE.md): sel[0] = start; d[i] = +inf; then for j >= 1, with p = sel[j-1],
// d[i] = min(d[i], ((dx*dx)+(dy*dy))+(dz*dz)) in fp32 without FMA contraction (dx = x_i - x_p, ...), and
// sel[j] = the smallest index among the maxima of d. Indices come out in selection order. A cloud with fewer
// distinct points than M keeps picking: every d is then 0 and the smallest index wins (it may repeat).
//
// A batch is several clouds stored one after another (`lengths`); each has its own sample count and start.
// All clouds of a batch run in one launch on CUDA, and one large cloud uses the whole GPU (every block takes
// part in each step's arg-max), not one block.
//
// This header needs no CUDA.
#include <cstdint>
#include <memory>
#include <vector>

#include "s3d/core/device.hpp"
#include "s3d/core/stream.hpp"
#include "s3d/core/views.hpp"

namespace s3d::points {

/// One batch of clouds for FPS. Points of cloud b are `xyz[3*offset_b ... 3*(offset_b + lengths[b]) - 1]`,
/// offset_b = lengths[0] + ... + lengths[b-1]. The memory space of `xyz` is the callee's to say.
struct FpsBatch {
  const float* xyz = nullptr;         ///< x y z per point, all clouds back to back
  std::vector<std::int64_t> lengths;  ///< points per cloud, each in [1, 2^31)
  std::vector<std::int64_t> samples;  ///< M per cloud, each in [0, lengths[b]] (the caller checks allow-fewer)
  std::vector<std::int64_t> starts;   ///< first index per cloud, each in [0, lengths[b]); empty = all 0

  /// Checks the shapes. @throws InvalidArgument naming the cloud and field.
  void validate() const;
  /// Sum of `samples`: the length of the output.
  std::int64_t total_samples() const;
};

/// An FPS engine bound to one device; it keeps its scratch buffers across calls. Not thread-safe.
class FpsEngine {
 public:
  /// @throws DeviceUnavailable when `device` is CUDA and none is usable.
  explicit FpsEngine(const Device& device);
  ~FpsEngine();
  FpsEngine(FpsEngine&&) noexcept;
  FpsEngine& operator=(FpsEngine&&) noexcept;

  /// Samples one cloud (host memory): `samples` indices in selection order.
  /// @throws InvalidArgument (shapes), CudaError, OutOfMemory.
  std::vector<std::int32_t> run(PointsView<const float> cloud, std::int64_t samples, std::int64_t start = 0);
  /// Samples a batch whose `xyz` is host memory: the indices of every cloud (local to it), back to back.
  /// @throws DataError for a non-finite coordinate (naming the point), as the host entries of every point engine.
  std::vector<std::int32_t> run(const FpsBatch& batch);
  /// Samples several host clouds in one launch (a batch of their copies, back to back): each cloud's indices,
  /// local to it, as run(clouds[b], samples[b], starts[b]) gives them.
  std::vector<std::vector<std::int32_t>> run_each(const std::vector<PointsView<const float>>& clouds,
                                                  const std::vector<std::int64_t>& samples,
                                                  const std::vector<std::int64_t>& starts);
  /// CUDA engines only: `batch.xyz` is device memory; writes total_samples() local indices to `device_out`
  /// (device memory), ordered on `stream`; no host synchronisation. @throws InvalidArgument on a CPU engine.
  void run_device_async(const FpsBatch& batch, std::int32_t* device_out, StreamHandle stream);

  const Device& device() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The sample count for a ratio of a cloud's N points: ceil(ratio * N), where a product within 1e-9 (relative)
/// of a whole number is that number (0.07 * 100 is 7, not the 8 that the double 7.000000000000001 rounds up
/// to); at least 1. @throws InvalidArgument unless 0 < ratio <= 1 and N >= 1.
std::int64_t samples_for_ratio(double ratio, std::int64_t n);

/// A reproducible random start for cloud number `item` of a run seeded with `seed`: SplitMix64(seed + item)
/// mod N (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014). The same on
/// every machine and shard, unlike std::uniform_int_distribution, whose output the standard leaves to the
/// library. @throws InvalidArgument for N < 1.
std::int64_t seeded_start(std::uint64_t seed, std::uint64_t item, std::int64_t n);

/// Samples one host cloud on `device` with a temporary engine.
std::vector<std::int32_t> farthest_point_sampling(const Device& device, PointsView<const float> cloud,
                                                  std::int64_t samples, std::int64_t start = 0);

}  // namespace s3d::points
