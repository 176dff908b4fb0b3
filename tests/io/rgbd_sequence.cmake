# Depth sequences (TUM, 7-Scenes, folders, lists) and depth frames in metres.
s3d_add_test(io_rgbd_sequence_test SOURCES rgbd_sequence_test.cpp LIBS s3d::io LABELS "io")
