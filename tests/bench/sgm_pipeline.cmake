# SgmPipeline batch benchmark (CUDA builds; OpenCV-free): sequential SgmEngine::compute vs the pipeline,
#   bench_sgm_pipeline [out.json] [N=50] [runs=9] [host_ms=1]
if(S3D_WITH_CUDA)
  add_executable(bench_sgm_pipeline ${CMAKE_CURRENT_SOURCE_DIR}/sgm_pipeline_bench.cpp)
  target_link_libraries(bench_sgm_pipeline PRIVATE s3d::stereo)
endif()
