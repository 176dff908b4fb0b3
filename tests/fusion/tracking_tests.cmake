# Tracking tests: per-stage CPU checks and CUDA == CPU bit for bit (test_fusion_tracking), and the engine
# on analytic scenes and real frames (test_fusion_engine; its frame-to-model case needs the volume).
s3d_add_test(test_fusion_tracking SOURCES tracking_stages_test.cpp icp_step_test.cpp LIBS s3d::fusion s3d_test_depth_frames
             LABELS "gpu;fusion")
target_include_directories(test_fusion_tracking PRIVATE ${PROJECT_SOURCE_DIR}/src/fusion/src)
s3d_add_test(test_fusion_engine SOURCES engine_tracking_test.cpp engine_motion_test.cpp engine_photometric_test.cpp LIBS s3d::fusion s3d_test_depth_frames
             LABELS "gpu;fusion")
target_include_directories(test_fusion_engine PRIVATE ${PROJECT_SOURCE_DIR}/src/fusion/src)
s3d_add_test(test_fusion_cpu_variants SOURCES tracking_cpu_variants_test.cpp LIBS s3d::fusion s3d_test_depth_frames
             LABELS "fusion")
target_include_directories(test_fusion_cpu_variants PRIVATE ${PROJECT_SOURCE_DIR}/src/fusion/src)
if(S3D_BUILD_IO)  # s3d::fusion_features needs OpenCV
  s3d_add_test(test_fusion_feature_motion SOURCES feature_motion_test.cpp LIBS s3d::fusion_features LABELS "fusion")
endif()
