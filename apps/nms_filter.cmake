# nms-filter: NMS of detection box files (docs/NMS-FILTER.md).
s3d_add_tool(nms-filter SOURCES nms-filter.cpp LIBS s3d::detection s3d::io)
