# The stand-in for the Python package's tests when there was no .venv at configure time (python/tests/CMakeLists.txt):
# `cmake -P` at test time, so it reads the environment of the ctest run.
if("$ENV{CI}" STREQUAL "true")
  message(FATAL_ERROR "s3d: no .venv at configure time (scripts/setup.sh makes it), so the Python package's tests did not run")
endif()
message("s3d: skipped: no .venv at configure time (run scripts/setup.sh, then the README's first command)")
