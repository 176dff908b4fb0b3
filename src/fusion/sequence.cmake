# A sequence fused frame by frame with read-ahead, and the engine's outputs as point clouds. CPU only.
set(S3D_FUSION_SEQUENCE_CPU
  ${CMAKE_CURRENT_LIST_DIR}/src/sequence.cpp         # the frame loop, records, tracking summary
  ${CMAKE_CURRENT_LIST_DIR}/src/surface_clouds.cpp)  # mesh and zero crossing as PointCloud
