# RGB-D sequences: TUM / 7-Scenes / plain folders and list files of depth frames, depth frames in metres.
list(APPEND S3D_IO_SOURCES
  src/rgbd_sequence.cpp
  src/rgbd_images.cpp)  # colour images by name or order (--images), read at the depth's size
