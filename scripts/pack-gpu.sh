#!/usr/bin/env bash
# Here (the dev machine): builds the `gpu` preset (sm_90, no OpenCV/PCL) and packs what the GPU machine
# needs into .carry/gpu (ignored by git): test and benchmark executables, the CTest files, the real data.
# Then, through the device tool: run `bash scripts/gpu-check.sh .carry/gpu` with carry [".carry/gpu"].
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cmake --preset gpu >/dev/null
cmake --build --preset gpu
build="$root/build/gpu"
out="$root/.carry/gpu"
rm -rf "$out"
mkdir -p "$out"
# CTest files, the executables of the tests labelled gpu, and the benchmarks; anything linking OpenCV or
# PCL stays here (the GPU machine has neither).
gpu_tests=$(cd "$build" && ctest -L gpu -N | awk '/Test +#/{print $3}' | sort -u)
(cd "$build" && find . \( -name CTestTestfile.cmake -o \( -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' \) \) \) -print) |
  while read -r f; do
    name=$(basename "$f")
    case "$name" in
      CTestTestfile.cmake) ;;
      test_*) echo "$gpu_tests" | grep -qx "$name" || continue ;;
      bench_*) ! ldd "$build/$f" | grep -qE 'libopencv|libpcl' || continue ;;
    esac
    mkdir -p "$out/$(dirname "$f")" && cp "$build/$f" "$out/$f"
  done
cp tests/bench/*.py "$out/" 2>/dev/null || true
# libSGM's sources and timing harness (../shared/peers), built there, so that bench_sgm has its peer in the same run.
peers="${S3D_PEERS_DIR:-$root/../shared/peers}"
if [ -d "$peers/libSGM" ]; then
  mkdir -p "$out/peers" && cp -r "$peers"/{libSGM,libsgm_bench,build.sh,bench_sgm.sh} "$out/peers/"
fi
# The same kernel tests built with S3D_PORTABLE_KERNELS: every sm_80+/sm_90 fast path replaced by the fallback
# that older GPUs (sm_75) run, so those paths run and are compared with the CPU oracle on this GPU too.
# S3D_SKIP_PORTABLE=1 leaves them out (a change that touches no kernel's code path).
if [ -z "${S3D_SKIP_PORTABLE:-}" ]; then
  cmake --preset gpu-portable >/dev/null
  cmake --build --preset gpu-portable
  mkdir -p "$out/portable"
  for t in test_stereo test_stereo_layouts test_nms test_points; do
    f=$(find "$root/build/gpu-portable/tests" -type f -perm -u+x -name "$t" | head -1)
    [ -n "$f" ] && cp "$f" "$out/portable/"
  done
fi
echo "$build" >"$out/BUILD_DIR"
data="${S3D_DATA_DIR:-$root/../shared/data}"
if [ -d "$data" ]; then
  # Only what the GPU tests read (detections); the stereo scenes travel as PGM copies below.
  mkdir -p "$out/data" && cp -r "$data/detections" "$out/data/"
  # test_points reads three real scans (12 MB); the other clouds stay here.
  mkdir -p "$out/data/pointclouds/kitti_velodyne" "$out/data/pointclouds/aerial_vol_total" \
    "$out/data/pointclouds/stanford_bunny"
  cp "$data/pointclouds/kitti_velodyne/000000.bin" "$out/data/pointclouds/kitti_velodyne/"
  cp "$data/pointclouds/stanford_bunny/bun_zipper.ply" "$out/data/pointclouds/stanford_bunny/"
  cp "$data/pointclouds/aerial_vol_total/vol_total_498868.ply" "$out/data/pointclouds/aerial_vol_total/"
  # The fusion suites read the 7-Scenes depth frames and poses (28 MB) and the colour of the frames they integrate.
  kitchen=rgbd/7scenes_redkitchen_f000-299
  mkdir -p "$out/data/$kitchen"
  cp "$data/$kitchen"/frame-*.depth.png "$data/$kitchen"/frame-*.pose.txt "$data/$kitchen"/{camera-intrinsics,groundtruth,depth}.txt \
    "$out/data/$kitchen/"
  for f in 000000 000020 000025 000040 000050 000060 000080; do cp "$data/$kitchen/frame-$f.color.jpg" "$out/data/$kitchen/"; done
  echo "$(cd "$data" && pwd)" >"$out/DATA_DIR"
fi
# The GPU machine cannot decode PNG (no OpenCV there): grey PGM copies of real scenes for the stereo tests,
# made with a build that has OpenCV (S3D_PGM_BUILD, default build/default).
pgm_build="${S3D_PGM_BUILD:-$root/build/default}"
if [ -d "$data" ] && [ -f "$pgm_build/build.ninja" ]; then
  cmake --build "$pgm_build" --target sgm_make_pgm
  mkdir -p "$out/pgm" && "$pgm_build/tests/stereo/sgm_make_pgm" "$data" "$out/pgm"
else
  echo "pack-gpu: no OpenCV build at $pgm_build: real-scene stereo GPU tests will skip" >&2
fi
du -sh "$out"
