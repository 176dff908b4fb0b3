# Source lists of s3d::fusion, one file per part so that the parts can grow independently.
include(${CMAKE_CURRENT_LIST_DIR}/tracking.cmake)    # engine, params, pre-processing, ICP
include(${CMAKE_CURRENT_LIST_DIR}/volume.cmake)      # TSDF integration, ray cast, marching cubes
include(${CMAKE_CURRENT_LIST_DIR}/trajectory.cmake)  # TUM trajectories, ATE / RPE
include(${CMAKE_CURRENT_LIST_DIR}/sequence.cmake)    # a sequence fused with read-ahead; meshes as clouds
set(S3D_FUSION_CPU_SOURCES ${S3D_FUSION_TRACKING_CPU} ${S3D_FUSION_VOLUME_CPU} ${S3D_FUSION_TRAJECTORY_CPU}
    ${S3D_FUSION_SEQUENCE_CPU})
set(S3D_FUSION_CUDA_SOURCES ${S3D_FUSION_TRACKING_CUDA} ${S3D_FUSION_VOLUME_CUDA})
