list(APPEND S3D_IO_SOURCES)  # boxes: filled by the boxes work
