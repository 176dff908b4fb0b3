#!/usr/bin/env bash
# Here (the dev machine): builds sgm-depth and pc-sample with CUDA (and OpenCV/PCL) for sm_90 and packs them for
# the GPU machine into .carry/node (ignored by git): both executables with their shared libraries
# (../shared/scripts/device-bundle), the KITTI pair and the KITTI scan. What runs there from that folder:
#   bash scripts/gpu-node-throughput.sh [N]   one process on one GPU, and one per GPU on a multi-GPU node
#   scripts/pack-gpu-node.sh [BUILD_DIR]       BUILD_DIR: a configured build with CUDA, OpenCV and PCL (default
#                                              build/sm90: configured here for sm_90 when missing)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/sm90}"
carry="$root/.carry/node"
data="${S3D_DATA_DIR:-$root/../shared/data}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
fi
cmake --build "$build" --target sgm-depth pc-sample
for exe in sgm-depth pc-sample; do
  "$build/apps/$exe" --version | grep -q '^cuda: on' ||
    echo "pack-gpu-node: $build has no CUDA: $exe there will run on the CPU only" >&2
done
rm -rf "$carry" && mkdir -p "$carry/data"
"$root/../shared/scripts/device-bundle" "$carry" "$build/apps/sgm-depth" "$build/apps/pc-sample"
cp "$data/stereo/kitti2015/000005_10/stereo_left.png" "$data/stereo/kitti2015/000005_10/stereo_right.png" \
   "$data/pointclouds/kitti_velodyne/000000.bin" "$carry/data/"
du -sh "$carry"
