#pragma once
// Internal: VoxelEngine's CUDA fast path for a bounded max_points_per_voxel, hash-based instead of sorting every
// point. Each point inserts its voxel key into a hash table (voxel_hash.cuh); each voxel counts its points and
// keeps its K smallest point indices through an atomicMin cascade; a scan over "first point of its voxel" flags
// ranks the voxels by first index (the max_voxels rule) and counts the kept voxels per key bucket (the key's
// high bits); the kept voxels are scattered into their buckets, and each finds its place in the key order (the
// output order) by counting the smaller keys of its bucket, writes its outputs and empties its table slot, so
// that the next call starts on a clean table without a memset. Four kernels and a scan in all. Same results,
// bit for bit, as voxels_cpu.cpp.
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

  /// Whether the fast path handles `request`: 1 <= max_points_per_voxel <= kMaxPoints, fewer than 2^29 points
  /// (table slots, 2n rounded up to a power of two, are int32), and a bounded cost of the order within buckets:
  /// a kept voxel counts the smaller keys of its bucket, so the path takes at most kMaxOrderWork =
  /// kept voxels x min(bucket span, kept voxels) of those steps (a floor filling whole buckets of a fine grid
  /// without max_voxels would cost quadratic time; the sort path takes it).
  static bool applies(const VoxelRequest& request);

  /// Voxelises `n = request.points.size` (>= 1) device-memory points `xyz` (and `batch`, or null) on `stream`,
  /// into this object's buffers (valid until the next call); waits for `stream` once, at the end, to bring the
  /// counts to the host. Buffers grow only. A call identical to the previous one (sizes, parameters, pointers)
  /// is captured into a CUDA graph on its first repeat and replayed after that. @throws CudaError, OutOfMemory.
  DeviceVoxels run(const VoxelRequest& request, const float* xyz, const std::int32_t* batch, StreamHandle stream);

  struct Plan;

 private:
  DeviceBuffer<unsigned char> table_;  // keys, ~lengths, members: 0xff when empty; each call empties what it used
  DeviceBuffer<unsigned> buckets_;     // per-bucket counts, group counts, cursors: 0 when empty, likewise
  DeviceBuffer<unsigned long long> tally_;
  DeviceBuffer<std::int32_t> point_slot_, owner_, kept_slot_, sorted_slot_, span_, point_voxel_;
  DeviceBuffer<std::int32_t> coords_, per_voxel_, representative_;
  DeviceBuffer<unsigned long long> sorted_key_;
  DeviceBuffer<float> out_xyz_;
  DeviceBuffer<unsigned char> scratch_;
  PinnedBuffer<unsigned long long> tally_host_;
  std::unique_ptr<Plan> plan_;  // the previous call's, compared with the next
  // How much of table_ and buckets_ is known empty (a completed call leaves them so); a memset readies more.
  std::size_t table_ready_ = 0, buckets_ready_ = 0;
  long long scan_sized_for_ = 0;  // the largest n CUB's scan scratch was sized for (larger scratch is fine)
  CudaGraph graph_;
  bool graphs_disabled_ = false;
};

}  // namespace s3d::points::detail
