# TSDF volume (integration, ray casting, marching cubes, surface cloud): CPU oracle and CUDA backend sharing
# tsdf_math.hpp.
set(S3D_FUSION_VOLUME_CPU
  ${CMAKE_CURRENT_LIST_DIR}/src/marching_cubes_tables.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/integrate_lanes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/raycast_lanes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/raycast_skipping.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/volume_common.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/volume_cpu.cpp)
set(S3D_FUSION_VOLUME_CUDA
  ${CMAKE_CURRENT_LIST_DIR}/src/volume_cuda.cu)
