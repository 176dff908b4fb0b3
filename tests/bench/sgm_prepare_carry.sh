#!/usr/bin/env bash
# Builds the stereo GPU test and benchmark for the GPU machine (no OpenCV there) and stages them, with grey
# PGM copies of three real scenes, in .carry/sgm (git-ignored; S3D_SGM_GPU_BUILD / S3D_SGM_CARRY /
# S3D_SGM_CPU_BUILD override the build dirs and the output dir). Then run on the GPU machine (carry .carry/sgm):
#   cd .carry/sgm && S3D_SGM_PGM_DIR=$PWD/pgm ./test_stereo --gtest_brief=1 && ./test_stereo_layouts && ./bench_sgm $OUT/bench_sgm.json
#   compute-sanitizer --tool memcheck ./test_stereo --gtest_filter='*cuda*:-*Shifted*:*Large*'
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
gpu_build=${S3D_SGM_GPU_BUILD:-build/sgm-gpu}
carry=${S3D_SGM_CARRY:-.carry/sgm}
cmake -S . -B "$gpu_build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DS3D_BUILD_IO=OFF \
  "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc" > /dev/null
cmake --build "$gpu_build" --target test_stereo test_stereo_layouts bench_sgm -j2
mkdir -p "$carry/pgm"
cp "$gpu_build"/tests/stereo/test_stereo "$gpu_build"/tests/stereo/test_stereo_layouts "$gpu_build"/tests/bench/bench_sgm "$carry/"
# PGM copies need OpenCV: built in a CPU build dir (default: build/sgm)
cpu_build=${S3D_SGM_CPU_BUILD:-build/sgm}
cmake --build "$cpu_build" --target sgm_make_pgm -j2
"$cpu_build"/tests/stereo/sgm_make_pgm "${S3D_DATA_DIR:-$root/../shared/data}" "$carry/pgm"
du -sh "$carry"
