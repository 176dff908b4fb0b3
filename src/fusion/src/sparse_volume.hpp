#pragma once
// Internal: the sparse (block-hashed) TSDF volume, VolumeParams::kind == kSparse. make_cpu_volume /
// make_cuda_volume return one for that kind; tests reach the extra methods through the factories below.
//
// Storage (sparse_volume_hash.hpp): 8^3-voxel blocks on the world lattice, a pool of
// sparse_block_capacity(params) blocks and an open-addressing hash from the block's packed coordinates to its
// pool slot, all allocated at construction. Per frame (integrate):
//  1. every valid depth pixel asks for the blocks its ray crosses within +-truncation of the depth
//     (sparse_volume_integrate.hpp: segment_blocks); the requests are sorted and made unique;
//  2. the blocks not yet allocated take the next free slots in coordinate order; when fewer slots are free
//     than new blocks, the new blocks nearest the camera (block_distance2, ties by coordinate) take them and the
//     rest are refused and counted (SparseStats::refused). Nothing is ever evicted: a full pool keeps what it has
//     and stops growing. A new block's voxels start at tsdf 0, weight 0;
//  3. every voxel of every allocated block that may be in the frustum takes the dense volume's update.
// Slots are handed out in the same order on both backends, but nothing below depends on it: extraction and
// download go by sorted block coordinates.
//
// Differences from the dense volume's contract (backend.hpp):
// - extract_mesh / extract_cloud ignore `slab_slices` (the scratch is per allocated voxel: 10 bytes each).
// - download / download_colors give the voxels of the allocated blocks, blocks in blocks() order (sorted by
//   (z, y, x)), 512 voxels each, x fastest inside the block.
#include <cstdint>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "sparse_volume_hash.hpp"
#include "sparse_volume_integrate.hpp"
#include "sparse_volume_raycast.hpp"

namespace s3d::fusion::detail {

struct SparseStats {
  long long capacity = 0;   ///< blocks the pool holds
  long long allocated = 0;  ///< blocks allocated since construction or reset()
  long long refused = 0;    ///< blocks asked for while the pool was full, summed over the frames since then
};

class SparseVolumeBackend : public VolumeBackend {
 public:
  /// The allocated blocks, sorted by key ((z, y, x)): the order of download() and of the extraction.
  virtual std::vector<BlockCoord> blocks() = 0;
  virtual SparseStats stats() = 0;
  /// On (the default), ray casts begin each march at its start tile (sparse_volume_raycast.hpp); off, every
  /// march runs from the box entry: the reference the tests hold the tiles to.
  void set_start_tiles(bool on) { start_tiles_ = on; }
  /// The most distinct block keys a frame's CUDA allocation gathers in its request set (default 2^20) before it
  /// sorts every pixel's requests instead; lower, the tests take that path. The CPU has no such path.
  void set_request_set_limit(int keys) { request_set_limit_ = keys; }

 protected:
  bool start_tiles_ = true;
  int request_set_limit_ = 1 << 20;
};

/// Pool blocks for `p`: sparse_memory_bytes / sparse_block_bytes(color), at most 2^24.
long long sparse_block_capacity(const VolumeParams& p);
/// Hash entries for a pool of `blocks`: the smallest power of two >= 2 * blocks.
unsigned int sparse_hash_entries(long long blocks);
/// Throws InvalidArgument naming the field of `p` a sparse volume cannot be built with.
void validate_sparse_volume(const VolumeParams& p);

AllocateArgs make_allocate_args(const SparseGrid& g, ImageView<const float> depth, const CameraIntrinsics& camera,
                                const Rigid& camera_to_world);
/// `bounds`: the allocated blocks' (BlockBounds), which both backends keep as they allocate.
SparseRaycastArgs make_sparse_raycast_args(const SparseGrid& g, const VolumeParams& p, const CameraIntrinsics& camera,
                                           const Rigid& camera_to_world, int width, int height,
                                           const BlockBounds& bounds);
/// The blocks of `keys` (any order), sorted by key: SparseVolumeBackend::blocks().
std::vector<BlockCoord> sorted_blocks(std::vector<unsigned long long> keys);
/// The block holding the camera centre (floor in double), clamped to the block range.
BlockCoord camera_block(const SparseGrid& g, const Rigid& camera_to_world);

std::unique_ptr<SparseVolumeBackend> make_cpu_sparse_volume(const VolumeParams& params);
/// Defined only when CUDA is built. @throws CudaError, OutOfMemory.
std::unique_ptr<SparseVolumeBackend> make_cuda_sparse_volume(const Device& device, const VolumeParams& params);

}  // namespace s3d::fusion::detail
