#pragma once
// Internal: VoxelEngine's CUDA fast path for a bounded max_points_per_voxel, hash-based instead of sorting every
// point. Each point inserts its voxel key into a hash table (voxel_hash.cuh); each voxel counts its points and
// keeps its K smallest point indices through an atomicMin cascade; a scan over "first point of its voxel" flags
// ranks the voxels by first index (the max_voxels rule); only the kept voxels are then sorted by key (the
// output order); one kernel writes every output. Same results, bit for bit, as voxels_cpu.cpp.
#include <cstdint>
#include <memory>

#include "s3d/core/cuda_graph.cuh"
#include "s3d/core/device_buffer.hpp"
#include "s3d/core/pinned_buffer.hpp"
#include "s3d/core/stream.hpp"
#include "voxels_impl.hpp"

namespace s3d::points::detail {

struct Outputs;

class HashVoxels {
 public:
  HashVoxels();
  ~HashVoxels();
  HashVoxels(const HashVoxels&) = delete;
  HashVoxels& operator=(const HashVoxels&) = delete;

  /// The largest max_points_per_voxel the fast path takes: the table keeps K indices per slot, and the
  /// cascade costs up to K atomics per point.
  static constexpr int kMaxPoints = 32;

  /// Whether the fast path handles `request`: 1 <= max_points_per_voxel <= kMaxPoints, and fewer than 2^29
  /// points (table slots, 2n rounded up to a power of two, are int32).
  static bool applies(const VoxelRequest& request) {
    return request.max_points_per_voxel >= 1 && request.max_points_per_voxel <= kMaxPoints &&
           request.points.size < (std::size_t{1} << 29);
  }

  /// Voxelises `n = request.points.size` (>= 1) device-memory points `xyz` (and `batch`, or null) on `stream`,
  /// into this object's buffers (valid until the next call); waits for `stream` once, at the end, to bring the
  /// counts to the host. Buffers grow only. A call identical to the previous one (sizes, parameters, pointers)
  /// is captured into a CUDA graph on its first repeat and replayed after that. @throws CudaError, OutOfMemory.
  DeviceVoxels run(const VoxelRequest& request, const float* xyz, const std::int32_t* batch, StreamHandle stream);

  struct Plan;

 private:
  DeviceBuffer<unsigned char> table_;  // keys, ~lengths, members, ~tallies: readied by one 0xff memset
  DeviceBuffer<std::int32_t> point_slot_, rank_, kept_slot_, point_voxel_;
  DeviceBuffer<std::int32_t> coords_, per_voxel_, representative_;
  DeviceBuffer<unsigned long long> kept_key_;
  DeviceBuffer<float> out_xyz_;
  DeviceBuffer<unsigned char> scratch_;
  PinnedBuffer<unsigned long long> tally_host_;
  std::unique_ptr<Plan> plan_;  // the previous call's, compared with the next
  CudaGraph graph_;
  bool graphs_disabled_ = false;
};

}  // namespace s3d::points::detail
