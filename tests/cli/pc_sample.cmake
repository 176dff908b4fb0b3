# pc-sample end to end: pc_sample_e2e_test.py (registered by tests/python_tests.cmake, one CTest per method,
# cli_pc_sample_e2e.<method>) runs the built tool on the clouds of ${S3D_DATA_DIR}/pointclouds and in a pipe
# after sgm-depth; these are the paths it reads.
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT
             "S3D_PC_SAMPLE=$<TARGET_FILE:pc-sample>"
             "S3D_SGM_DEPTH=$<TARGET_FILE:sgm-depth>"
             "S3D_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
# --emit preview: the pictures decoded and their pixels checked.
s3d_add_test(test_cli_pc_sample_preview SOURCES pc_sample_preview_test.cpp LIBS s3d::io LABELS "cli")
target_compile_definitions(test_cli_pc_sample_preview PRIVATE S3D_PC_SAMPLE_EXE="$<TARGET_FILE:pc-sample>")
add_dependencies(test_cli_pc_sample_preview pc-sample)
