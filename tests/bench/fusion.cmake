# Fusion benchmarks: owned by the icp-fuse work.
#   bench_fusion  FusionEngine over the real 7-Scenes frames: per-stage medians (JSON) and the trajectory; reads
#                 the frames with the tests' libpng reader, so it needs the test tree (and no OpenCV).
if(TARGET s3d_test_depth_frames)
  add_executable(bench_fusion ${CMAKE_CURRENT_SOURCE_DIR}/fusion_bench.cpp)
  target_link_libraries(bench_fusion PRIVATE s3d::fusion s3d_test_depth_frames)
  target_include_directories(bench_fusion PRIVATE ${PROJECT_SOURCE_DIR}/tests/fusion)
endif()
