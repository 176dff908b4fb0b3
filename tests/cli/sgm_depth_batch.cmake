# sgm-depth batch end to end (read-ahead + SgmPipeline): outputs == one-pair runs, order, per-item errors.
if(TARGET sgm-depth)
  s3d_add_test(test_cli_sgm_depth_batch SOURCES sgm_depth_batch_test.cpp LIBS s3d::io
               LABELS "cli;stereo")
  target_compile_definitions(test_cli_sgm_depth_batch PRIVATE S3D_SGM_DEPTH_EXE="$<TARGET_FILE:sgm-depth>"
                                                              S3D_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_dependencies(test_cli_sgm_depth_batch sgm-depth)
  set_tests_properties(test_cli_sgm_depth_batch PROPERTIES TIMEOUT 600)
endif()
