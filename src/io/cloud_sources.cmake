# Point clouds (s3d::PointCloud): PLY, PCD (with LZF), KITTI .bin, .npy, and the by-extension dispatcher.
list(APPEND S3D_IO_SOURCES
  src/cloud_codec.cpp
  src/ply_read.cpp
  src/xyz_rgb_records.cpp
  src/ply_write.cpp
  src/lzf.cpp
  src/pcd.cpp
  src/kitti_bin.cpp
  src/npy.cpp
  src/index_list.cpp  # row lists as text
  src/zip.cpp  # ZIP archives, stored: the .npz container (and result archives)
  src/point_cloud_io.cpp)
