# Point-cloud benchmarks: owned by the points work.
#   bench_points  CUDA events, device-resident, median of >= 20 runs, the cases of
#                 ../shared/peers/bench_points.py; --dump DIR reads that script's inputs and outputs (same run)
#                 and reports how many rows equal the peers'.
if(S3D_WITH_CUDA)
  add_executable(bench_points ${CMAKE_CURRENT_SOURCE_DIR}/points_bench.cpp)
  target_link_libraries(bench_points PRIVATE s3d::points)
endif()

#   bench_rulebook  RulebookEngine::build_device on the torchsparse peer's saved input (subm k3, k3 s2, SECOND's
#                   chained middle encoder), host clock around the synchronous call, median of >= 20 runs.
if(S3D_WITH_CUDA)
  add_executable(bench_rulebook ${CMAKE_CURRENT_SOURCE_DIR}/rulebook_bench.cpp)
  target_link_libraries(bench_rulebook PRIVATE s3d::points)
endif()

#   bench_voxels  VoxelEngine::voxelize on a KITTI scan (host memory in and out), median of >= 20 runs.
add_executable(bench_voxels ${CMAKE_CURRENT_SOURCE_DIR}/voxels_bench.cpp)
target_link_libraries(bench_voxels PRIVATE s3d::points)
