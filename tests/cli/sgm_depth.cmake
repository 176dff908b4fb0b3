# sgm-depth end to end: runs the built executable on data/sample (label `cli`).
s3d_add_test(test_cli_sgm_depth SOURCES sgm_depth_test.cpp LIBS s3d::io LABELS "cli")
target_compile_definitions(test_cli_sgm_depth PRIVATE S3D_SGM_DEPTH_EXE="$<TARGET_FILE:sgm-depth>"
                                                      S3D_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(test_cli_sgm_depth sgm-depth)
set_tests_properties(test_cli_sgm_depth PROPERTIES TIMEOUT 600)
# Hostile inputs, end to end (sgm_depth_hardening_test.py, registered by tests/python_tests.cmake).
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_SGM_DEPTH=$<TARGET_FILE:sgm-depth>")
