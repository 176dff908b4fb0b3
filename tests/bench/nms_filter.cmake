# nms-filter end to end, wall clock (the speed side of test_cli_nms_filter's golden MOT batch):
#   bench_nms_filter_cli   Google Benchmark running the built tool on the real MOT files (needs the data).
if(TARGET nms-filter)
  add_executable(bench_nms_filter_cli ${CMAKE_CURRENT_SOURCE_DIR}/nms_filter_cli_bench.cpp)
  target_link_libraries(bench_nms_filter_cli PRIVATE benchmark::benchmark)
  target_compile_definitions(bench_nms_filter_cli PRIVATE S3D_NMS_FILTER_EXE="$<TARGET_FILE:nms-filter>"
                                                          S3D_BENCH_DATA_DIR="${S3D_DATA_DIR}")
  add_dependencies(bench_nms_filter_cli nms-filter)
endif()
