# nms-filter: s3d_add_tool(nms-filter SOURCES nms-filter.cpp LIBS s3d::detection)
