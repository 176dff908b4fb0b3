# The stereo chain end to end: stereo_chain_e2e_test.py (registered by tests/python_tests.cmake, one CTest per
# method, cli_stereo_chain_e2e.<method>) runs `sgm-depth --emit depth --output-dir` and then icp-fuse on that
# folder, on data/sample and on ${S3D_DATA_DIR}/stereo_sequences/kitti_odometry_02_f000-050 (51 pairs: about
# 25 s on two cores). It reads both tools' paths, set for this folder by sgm_depth.cmake (S3D_SGM_DEPTH) and
# icp_fuse.cmake (S3D_ICP_FUSE): nothing more to declare here.
