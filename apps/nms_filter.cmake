# nms-filter: NMS of detection box files (docs/NMS-FILTER.md).
s3d_add_tool(nms-filter
  SOURCES nms-filter.cpp
          nms_filter/plan.cpp     # flags -> NMS and reader settings, output paths
          nms_filter/box_job.cpp  # stages: read and group, NMS, write the kept boxes
          nms_filter/drawn.cpp    # --emit drawn: the boxes on their images
  LIBS s3d::detection s3d::io)
