# Image / disparity / calibration / PLY formats of s3d::io.
s3d_add_test(io_image_formats_test SOURCES image_formats_test.cpp LIBS s3d::io)
s3d_add_test(io_image_geometry_test SOURCES image_geometry_test.cpp LIBS s3d::io)

# The SGM accuracy comparison (tests/accuracy) is built from here until tests/CMakeLists.txt includes it.
if(NOT TARGET sgm-accuracy AND TARGET s3d::stereo)
  add_subdirectory(${PROJECT_SOURCE_DIR}/tests/accuracy ${PROJECT_BINARY_DIR}/tests/accuracy)
endif()
