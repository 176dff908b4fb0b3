# nms-filter end to end: runs the built executable on the real detection files (label `cli`).
s3d_add_test(test_cli_nms_filter SOURCES nms_filter_test.cpp LIBS s3d::io LABELS "cli")
target_compile_definitions(test_cli_nms_filter PRIVATE S3D_NMS_FILTER_EXE="$<TARGET_FILE:nms-filter>")
add_dependencies(test_cli_nms_filter nms-filter)
# Hostile inputs, end to end (nms_filter_hardening_test.py, registered by tests/python_tests.cmake).
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_NMS_FILTER=$<TARGET_FILE:nms-filter>")
# --emit drawn: pictures decoded and their pixels checked.
s3d_add_test(test_cli_nms_filter_drawn SOURCES nms_filter_drawn_test.cpp LIBS s3d::io LABELS "cli")
target_compile_definitions(test_cli_nms_filter_drawn PRIVATE S3D_NMS_FILTER_EXE="$<TARGET_FILE:nms-filter>")
add_dependencies(test_cli_nms_filter_drawn nms-filter)
