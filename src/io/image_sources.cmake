# Rasters (PNG 8/16 via OpenCV, PFM, KITTI/x16/mm disparity and depth PNGs), colour maps, stereo
# calibration (KITTI, Q, YAML, Middlebury), stereo dataset naming. (Disparity evaluation masks and reports:
# s3d::stereo_eval, src/io/CMakeLists.txt.)
list(APPEND S3D_IO_SOURCES
  src/image.cpp
  src/png_decode.cpp  # PNG through libpng with our own error handlers (no libpng lines on stderr)
  src/pfm.cpp
  src/calib.cpp
  src/opencv_storage.cpp
  src/colormap.cpp
  src/plots.cpp       # trajectory and error-over-time pictures (evo-style plots)
  src/overlays.cpp    # boxes drawn on their image, a cloud seen from above with its samples
  src/stereo_datasets.cpp)  # dataset naming: KITTI / Middlebury folders, gt scale, masks
