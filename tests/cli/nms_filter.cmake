# nms-filter end to end: runs the built executable on the real detection files (label `cli`).
s3d_add_test(test_cli_nms_filter SOURCES nms_filter_test.cpp LIBS s3d::io LABELS "cli")
target_compile_definitions(test_cli_nms_filter PRIVATE S3D_NMS_FILTER_EXE="$<TARGET_FILE:nms-filter>")
add_dependencies(test_cli_nms_filter nms-filter)
