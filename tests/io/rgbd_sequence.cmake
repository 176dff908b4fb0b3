# Depth sequences (TUM, 7-Scenes, folders, lists) and depth frames in metres.
s3d_add_test(io_rgbd_sequence_test SOURCES rgbd_sequence_test.cpp LIBS s3d::io LABELS "io")
# A sequence's files joined to s3d::fusion: frames read for the runner, pose files, frames.jsonl.
s3d_add_test(io_fusion_files_test SOURCES fusion_files_test.cpp LIBS s3d::fusion_files LABELS "io")
