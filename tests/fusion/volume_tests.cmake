# TSDF volume suites (integration, ray cast, marching cubes / cloud): CPU rows always, CUDA rows against the
# CPU oracle when CUDA is built (skipped without a GPU). They drive the internal VolumeBackend directly.
s3d_add_test(test_fusion_volume
  SOURCES volume_integrate_test.cpp volume_raycast_test.cpp volume_raycast_skipping_test.cpp volume_mesh_test.cpp
          volume_timing_test.cpp
  LIBS s3d::fusion s3d_test_depth_frames
  LABELS "gpu;fusion")
target_include_directories(test_fusion_volume PRIVATE ${PROJECT_SOURCE_DIR}/src/fusion/src)
# The sparse (block-hashed) volume: against the dense volume on a shared lattice, far scenes, the memory bound,
# and the CUDA backend against the CPU's bit for bit (real frames; skipped without a GPU).
s3d_add_test(test_fusion_sparse_volume
  SOURCES sparse_volume_test.cpp sparse_volume_gpu_test.cpp
  LIBS s3d::fusion s3d_test_depth_frames
  LABELS "gpu;fusion")
target_include_directories(test_fusion_sparse_volume PRIVATE ${PROJECT_SOURCE_DIR}/src/fusion/src)
