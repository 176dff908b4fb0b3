# Trajectory I/O and evaluation (CPU only): TUM / 7-Scenes pose files, association, ATE, RPE.
s3d_add_test(fusion_trajectory_eval_test SOURCES trajectory_eval_test.cpp LIBS s3d::fusion)
s3d_add_test(fusion_evo_metrics_test SOURCES evo_metrics_test.cpp LIBS s3d::fusion)
