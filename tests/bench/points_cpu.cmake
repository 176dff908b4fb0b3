# Point-cloud CPU benchmarks: owned by the points work (needs s3d::io and PCL, so only with S3D_BUILD_IO).
#   bench_points_cpu  Google Benchmark: s3d::points on the CPU device beside PCL's KdTreeFLANN (kNN, radius
#                     search, tree build), FPS, and binary PLY reading (beside cat) on the
#                     real clouds; Open3D's FPS: points_open3d_fps.py.
if(S3D_BUILD_IO)
  find_package(PCL 1.10 REQUIRED COMPONENTS common kdtree)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  add_executable(bench_points_cpu ${CMAKE_CURRENT_SOURCE_DIR}/points_cpu_bench.cpp)
  target_link_libraries(bench_points_cpu PRIVATE s3d::points s3d::io ${PCL_LIBRARIES} OpenMP::OpenMP_CXX
                                                 benchmark::benchmark)
  target_include_directories(bench_points_cpu SYSTEM PRIVATE ${PCL_INCLUDE_DIRS})
  target_compile_definitions(bench_points_cpu PRIVATE S3D_BENCH_DATA_DIR="${S3D_DATA_DIR}")
endif()
