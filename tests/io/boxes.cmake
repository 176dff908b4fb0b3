# Box file formats (s3d/io/boxes.hpp): round trips on the real detection files, bad-input cases.
s3d_add_test(test_io_boxes SOURCES boxes_test.cpp LIBS s3d::io LABELS "io")
# A filter's kept records, their positions and the boxes to draw (s3d/io/boxes.hpp, overlays.hpp).
s3d_add_test(io_boxes_kept_test SOURCES boxes_kept_test.cpp LIBS s3d::io LABELS "io")
