#!/usr/bin/env bash
# Here (the dev machine): builds sgm-depth and pc-sample with CUDA (and OpenCV/PCL), and packs them for the GPU
# machine (which has no OpenCV/PCL) into .carry/cli (ignored by git): the executables with their shared
# libraries (../shared/scripts/device-bundle), a few real pairs and the KITTI scan. What runs there from it:
#   bash scripts/gpu-cli-check.sh run    cuda == cpu byte for byte on a mixed batch, and a short wall clock
#   bash scripts/gpu-throughput.sh       500 KITTI-size pairs, PNG -> PFM and PNG -> KITTI PNG, pairs/s
#   bash scripts/gpu-node-throughput.sh  500 pairs and 500 scans, one process per GPU, GPU busy fraction
# (through the device tool, carry [".carry/cli"]).
#   scripts/pack-gpu-cli.sh [BUILD_DIR]   BUILD_DIR: a configured build with CUDA and OpenCV (default
#                                         build/sm90: configured here for sm_90 when missing)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/sm90}"
carry="$root/.carry/cli"
data="${S3D_DATA_DIR:-$root/../shared/data}/stereo"
scan="${S3D_DATA_DIR:-$root/../shared/data}/pointclouds/kitti_velodyne/000000.bin"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
fi
cmake --build "$build" --target sgm-depth pc-sample
for exe in sgm-depth pc-sample; do
  "$build/apps/$exe" --version | grep -q '^cuda: on' ||
    echo "pack-gpu-cli: $build has no CUDA: $exe there will run on the CPU only" >&2
done
rm -rf "$carry" && mkdir -p "$carry/data"
"$root/../shared/scripts/device-bundle" "$carry" "$build/apps/sgm-depth" "$build/apps/pc-sample"
cp "$data/kitti2015/000005_10/stereo_left.png" "$data/kitti2015/000005_10/stereo_right.png" \
   "$data/kitti2015/000005_10/Calib.txt" "$scan" "$carry/data/"
for s in cones teddy; do
  cp "$data/middlebury2003/$s/imL.png" "$carry/data/${s}_l.png"
  cp "$data/middlebury2003/$s/imR.png" "$carry/data/${s}_r.png"
done
du -sh "$carry"
