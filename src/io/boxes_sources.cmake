# boxes: detection box files (COCO results JSON, CSV, JSON Lines, MOTChallenge det.txt, VOC text folders)
list(APPEND S3D_IO_SOURCES src/boxes.cpp src/boxes_text.cpp src/boxes_json.cpp
  src/boxes_kept.cpp)  # a filter's kept records, their positions, the boxes to draw per image
