#pragma once
// Internal (nvcc only): the sparse volume's CUDA storage as its extraction reads it
// (sparse_volume_extract_cuda.cu), and the extraction entry points.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "s3d/core/device_buffer.hpp"
#include "s3d/fusion/fusion_engine.hpp"
#include "sparse_volume_hash.hpp"

namespace s3d::fusion::detail {

/// Device pointers of one sparse volume.
struct SparseDeviceVolume {
  SparseGrid grid;
  BlockHash hash;
  const Voxel* voxels;
  const ColorVoxel* colors;              ///< null without colour
  const unsigned long long* block_keys;  ///< per pool slot
  long long blocks;                      ///< allocated: slots [0, blocks)
};

/// Copies the marching cubes tables to the extraction's constant memory (once, at construction).
void upload_sparse_mc_tables(cudaStream_t stream);

/// The allocated blocks' keys sorted (`keys`) and their pool slots in that order (`slots`), on the device.
/// Synchronizes `stream`.
void sort_blocks_cuda(const SparseDeviceVolume& v, DeviceBuffer<unsigned long long>& keys, DeviceBuffer<int>& slots,
                      cudaStream_t stream);

/// Marching cubes and the surface cloud in key order (sparse_volume_extract.hpp), as the CPU backend's.
/// Synchronize `stream`; the scratch (10 bytes an allocated voxel for the mesh) is allocated per call.
Mesh sparse_mesh_cuda(const SparseDeviceVolume& v, cudaStream_t stream);
SurfaceCloud sparse_cloud_cuda(const SparseDeviceVolume& v, cudaStream_t stream);

}  // namespace s3d::fusion::detail
