# icp-fuse end to end: icp_fuse_e2e_test.py (registered by tests/python_tests.cmake, one CTest per method,
# cli_icp_fuse_e2e.<method>) runs the built tool on a few frames of ${S3D_DATA_DIR}/rgbd/ and on synthetic
# sequences; this is the path it reads.
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_ICP_FUSE=$<TARGET_FILE:icp-fuse>")
# icp_fuse_evo_test.py compares the evaluation with evo itself (PyPI), which scripts/setup.sh installs here.
set(S3D_EVO_BIN "${PROJECT_SOURCE_DIR}/.venv-evo/bin" CACHE PATH "bin folder of a Python environment that has evo")
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_EVO_BIN=${S3D_EVO_BIN}")
