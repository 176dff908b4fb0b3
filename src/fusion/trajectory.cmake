# Trajectory I/O (TUM, 7-Scenes pose files), timestamp association, ATE / RPE. CPU only, no CUDA.
set(S3D_FUSION_TRAJECTORY_CPU
  ${CMAKE_CURRENT_LIST_DIR}/src/trajectory.cpp  # TUM text, 4x4 pose files, associate.py matching
  ${CMAKE_CURRENT_LIST_DIR}/src/evaluate.cpp     # Horn/Umeyama alignment, ATE, RPE
  ${CMAKE_CURRENT_LIST_DIR}/src/evo_metrics.cpp) # evo's APE / RPE, statistics and text block
