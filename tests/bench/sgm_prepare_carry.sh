#!/usr/bin/env bash
# Builds the stereo GPU test and benchmark for the GPU machine (no OpenCV there) and stages them, with grey
# PGM copies of three real scenes, in .carry/sgm (git-ignored). Then run on the GPU machine (carry .carry/sgm):
#   cd .carry/sgm && S3D_SGM_PGM_DIR=$PWD/pgm ./test_stereo --gtest_brief=1 && ./test_stereo_layouts && ./bench_sgm $OUT/bench_sgm.json
#   compute-sanitizer --tool memcheck ./test_stereo --gtest_filter='*cuda*:-*Shifted*:*Large*'
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cmake -S . -B build/sgm-gpu -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DS3D_BUILD_IO=OFF \
  "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc" > /dev/null
cmake --build build/sgm-gpu --target test_stereo test_stereo_layouts bench_sgm -j2
mkdir -p .carry/sgm/pgm
cp build/sgm-gpu/tests/stereo/test_stereo build/sgm-gpu/tests/stereo/test_stereo_layouts build/sgm-gpu/tests/bench/bench_sgm .carry/sgm/
# PGM copies need OpenCV: built in a CPU build dir (default: build/sgm)
cpu_build=${S3D_SGM_CPU_BUILD:-build/sgm}
cmake --build "$cpu_build" --target sgm_make_pgm -j2
"$cpu_build"/tests/stereo/sgm_make_pgm "${S3D_DATA_DIR:-$root/../shared/data}" .carry/sgm/pgm
du -sh .carry/sgm
