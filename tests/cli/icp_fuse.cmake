# icp-fuse end to end: icp_fuse_e2e_test.py (registered by tests/python_tests.cmake, one CTest per method,
# cli_icp_fuse_e2e.<method>) runs the built tool on a few frames of ${S3D_DATA_DIR}/rgbd/ and on synthetic
# sequences; this is the path it reads.
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_ICP_FUSE=$<TARGET_FILE:icp-fuse>")
