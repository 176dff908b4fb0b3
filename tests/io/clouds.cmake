# Point-cloud formats (PLY, PCD, KITTI .bin, .npy): real-data round trips, hand-made files, hostile input.
s3d_add_test(test_io_clouds SOURCES point_cloud_real_test.cpp point_cloud_formats_test.cpp
             point_cloud_hostile_test.cpp LIBS s3d::io LABELS "io")
