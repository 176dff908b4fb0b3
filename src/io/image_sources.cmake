list(APPEND S3D_IO_SOURCES)  # images: filled by the image work
