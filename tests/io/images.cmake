# Image / disparity / calibration / PLY formats of s3d::io.
s3d_add_test(io_image_formats_test SOURCES image_formats_test.cpp LIBS s3d::io LABELS "io")
s3d_add_test(io_image_geometry_test SOURCES image_geometry_test.cpp LIBS s3d::io s3d::stereo_eval LABELS "io")

s3d_add_test(io_plots_test SOURCES plots_test.cpp LIBS s3d::io LABELS "io")
s3d_add_test(io_error_image_test SOURCES error_image_test.cpp LIBS s3d::io LABELS "io")
s3d_add_test(io_overlays_test SOURCES overlays_test.cpp LIBS s3d::io LABELS "io")

# OpenCV's FileStorage writer is the reference for the YAML/XML calibrations s3d reads with its own parser.
find_package(OpenCV REQUIRED COMPONENTS core)
s3d_add_test(io_calibration_storage_test SOURCES calibration_storage_test.cpp LIBS s3d::io ${OpenCV_LIBS} LABELS "io")
