# TSDF volume (integration, ray casting, marching cubes, surface cloud): CPU oracle and CUDA backend sharing
# tsdf_math.hpp; the dense cube (volume_*) and the sparse block-hashed volume (sparse_volume_*).
set(S3D_FUSION_VOLUME_CPU
  ${CMAKE_CURRENT_LIST_DIR}/src/marching_cubes_tables.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/integrate_lanes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/raycast_lanes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/raycast_skipping.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/volume_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/volume_cpu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/sparse_volume_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/sparse_volume_cpu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/sparse_volume_extract_cpu.cpp)
set(S3D_FUSION_VOLUME_CUDA
  ${CMAKE_CURRENT_LIST_DIR}/src/volume_cuda.cu
  ${CMAKE_CURRENT_LIST_DIR}/src/sparse_volume_cuda.cu
  ${CMAKE_CURRENT_LIST_DIR}/src/sparse_volume_extract_cuda.cu)
