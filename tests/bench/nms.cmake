# NMS benchmarks: owned by the detection work.
#   bench_nms      CUDA events, device-resident, median of >= 20 runs; --dump DIR writes the inputs for
#                  tests/bench/nms_torchvision.py (same boxes, same run).
#   bench_nms_cpu  Google Benchmark, CPU backend (with the 20k single group of test_nms).
if(S3D_WITH_CUDA)
  add_executable(bench_nms ${CMAKE_CURRENT_SOURCE_DIR}/nms_bench.cpp)
  target_link_libraries(bench_nms PRIVATE s3d::detection CUDA::cudart_static)
endif()
add_executable(bench_nms_cpu ${CMAKE_CURRENT_SOURCE_DIR}/nms_cpu_bench.cpp)
target_link_libraries(bench_nms_cpu PRIVATE s3d::detection benchmark::benchmark)
# the box generators of tests/detection, so a benchmark can time exactly a correctness test's input
target_include_directories(bench_nms_cpu PRIVATE ${PROJECT_SOURCE_DIR}/tests/detection)
