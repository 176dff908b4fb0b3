# Point-cloud benchmarks: owned by the points work.
#   bench_points  CUDA events, device-resident, median of >= 20 runs, the cases of
#                 ../shared/peers/bench_points.py; --dump DIR reads that script's inputs and outputs (same run)
#                 and reports how many rows equal the peers'.
if(S3D_WITH_CUDA)
  add_executable(bench_points ${CMAKE_CURRENT_SOURCE_DIR}/points_bench.cpp)
  target_link_libraries(bench_points PRIVATE s3d::points)
endif()
