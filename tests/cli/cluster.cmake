# Datasets beyond one process: cluster_test.py (a real single-node Slurm via scripts/slurm-local.sh, and GNU
# parallel; registered by tests/python_tests.cmake as cli_cluster.<method>). It runs sgm-depth and pc-sample
# (their paths come from sgm_depth.cmake / pc_sample.cmake) and skips itself in the sanitizer build, where
# the same batches run 10-20x slower and the scheduling code it checks is the release build's.
set_property(DIRECTORY APPEND PROPERTY S3D_PYTHON_TEST_ENVIRONMENT "S3D_SANITIZE=${S3D_SANITIZE}")
