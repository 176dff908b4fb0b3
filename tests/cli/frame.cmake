# frame tests: unit tests of the frame's pieces, and end-to-end runs of a demo tool built on it.
include(${PROJECT_SOURCE_DIR}/cmake/S3dTool.cmake)
s3d_add_tool(s3d-frame-demo SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frame/frame_demo.cpp NO_INSTALL)

s3d_add_test(cli_frame_unit SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frame_unit_test.cpp LIBS s3d::cli LABELS "cli")
s3d_add_test(cli_merge_reports SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/merge_reports_test.cpp LIBS s3d::cli LABELS "cli")

# End-to-end: frame_e2e_test.py drives s3d-frame-demo (registered by tests/python_tests.cmake, one CTest per
# test method, cli_frame_e2e.<method>); these are the paths it reads.
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT
             "S3D_FRAME_DEMO=$<TARGET_FILE:s3d-frame-demo>"
             "S3D_FRAME_DEMO_DOC_DIR=${CMAKE_CURRENT_BINARY_DIR}/s3d-frame-demo-doc")

# The frame's staged items (load / handle / write) with fake stages; it reaches the scheduler's private header.
s3d_add_test(cli_frame_stages SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/frame_stages_test.cpp LIBS s3d::cli LABELS "cli")
target_include_directories(cli_frame_stages PRIVATE ${PROJECT_SOURCE_DIR}/src/cli/src)

# The output, input and signal promises (frame_outputs_test.py) are also checked on the real tools.
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_NMS_FILTER=$<TARGET_FILE:nms-filter>"
                                                                   "S3D_SGM_DEPTH=$<TARGET_FILE:sgm-depth>")
