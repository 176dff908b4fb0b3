#pragma once
// Internal (CUDA backend of VoxelEngine): CloudSummary of device-memory points in one pass, for
// voxelize_device's world and min-bound grids and batch ids (voxels_impl.hpp).
#include <cstdint>

#include "s3d/core/device_buffer.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "voxels_impl.hpp"

namespace s3d::points::detail {

/// The reduction's state on the device: ordered-int bounds, the largest batch id, the first bad indices.
struct SummaryWords {
  int lo[3], hi[3];
  int max_batch;
  unsigned long long first_non_finite, first_negative_batch;
};

class CloudSummarizer {
 public:
  /// CloudSummary of `n` >= 1 points `xyz` (and `batch`, or null) on `stream`; waits for it. Buffers are
  /// allocated on the first call.
  CloudSummary run(const float* xyz, const std::int32_t* batch, long long n, StreamHandle stream);

 private:
  DeviceBuffer<SummaryWords> words_;
  PinnedBuffer<SummaryWords> host_;
};

}  // namespace s3d::points::detail
