#pragma once
// Internal: the sparse volume's CPU storage as its extraction reads it (sparse_volume_extract_cpu.cpp).
#include <vector>

#include "s3d/fusion/fusion_engine.hpp"
#include "sparse_volume_hash.hpp"

namespace s3d::fusion::detail {

struct SparseHostVolume {
  SparseGrid grid;
  BlockHash hash;
  const Voxel* voxels;
  const ColorVoxel* colors;                     ///< null without colour
  const std::vector<unsigned long long>* keys;  ///< allocated blocks' keys, sorted
  const std::vector<int>* order;                ///< pool slot -> position in `keys`
};

/// Marching cubes and the surface cloud, block by block in key order (sparse_volume_extract.hpp).
Mesh sparse_mesh_cpu(const SparseHostVolume& v);
SurfaceCloud sparse_cloud_cpu(const SparseHostVolume& v);

}  // namespace s3d::fusion::detail
