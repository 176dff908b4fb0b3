# Box file formats (s3d/io/boxes.hpp): round trips on the real detection files, bad-input cases.
s3d_add_test(test_io_boxes SOURCES boxes_test.cpp LIBS s3d::io LABELS "io")
