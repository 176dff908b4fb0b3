# Trajectory I/O and evaluation (CPU only): TUM / 7-Scenes pose files, association, ATE, RPE.
s3d_add_test(fusion_trajectory_eval_test SOURCES trajectory_eval_test.cpp LIBS s3d::fusion)
s3d_add_test(fusion_evo_metrics_test SOURCES evo_metrics_test.cpp LIBS s3d::fusion)
# The sequence loop (read-ahead, records, the engine's poses) and the mesh as a point cloud (CPU only).
s3d_add_test(fusion_sequence_test SOURCES sequence_test.cpp LIBS s3d::fusion LABELS "fusion")
target_include_directories(fusion_sequence_test PRIVATE ${PROJECT_SOURCE_DIR}/src/fusion/src)  # the box scenes
