# Stereo dataset naming (KITTI / Middlebury folders, gt scale, masks) and decoding from bytes.
s3d_add_test(io_stereo_datasets_test SOURCES stereo_datasets_test.cpp LIBS s3d::io)
