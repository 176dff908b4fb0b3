# s3d::fusion_features — a frame-to-frame motion from matched ORB features (OpenCV), the start that dense
# ICP cannot find by itself (feature_motion.hpp). Built with the tools (S3D_BUILD_IO): s3d::fusion needs no OpenCV.
find_package(OpenCV REQUIRED COMPONENTS core imgproc features2d calib3d)
s3d_add_library(fusion_features SOURCES ${CMAKE_CURRENT_LIST_DIR}/src/feature_motion.cpp NO_HEADERS
  PUBLIC s3d::fusion PRIVATE ${OpenCV_LIBS})
