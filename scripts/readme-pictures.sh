#!/usr/bin/env bash
# Makes the README's pictures (docs/pictures/*.png), one per tool, with the built tools:
#   sgm-depth  the sample pair's disparity in colour (data/sample)
#   nms-filter the sample's hand-made detections (data/sample/detections.jsonl: overlapping candidates around
#              the three objects, written for this picture, not a detector's output) after NMS at IoU 0.5 per
#              class, the suppressed boxes faint
#   pc-sample  a KITTI Velodyne scan seen from above with 1024 farthest point samples (the real data)
#   icp-fuse   7-Scenes redkitchen frames 0-99 on the CPU: the trajectory coloured by its error against the
#              dataset's poses (the real data)
# Usage: scripts/readme-pictures.sh [BUILD_DIR]   (default build/default; the real data from ../shared/data or
# $S3D_DATA_DIR). Writes only docs/pictures/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/default}
data=${S3D_DATA_DIR:-../shared/data}
out=docs/pictures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
run() { "$build/apps/$1" --device cpu --overwrite --progress never "${@:2}"; }

run sgm-depth data/sample/left.png data/sample/right.png --emit color -o "$out/sgm-depth.png"
run nms-filter --iou 0.5 --per-class --emit drawn --draw-suppressed data/sample/detections.jsonl -o "$tmp/drawn"
cp "$tmp/drawn/left.png" "$out/nms-filter.png"
run pc-sample fps -n 1024 --emit preview "$data/pointclouds/kitti_velodyne/000000.bin" -o "$out/pc-sample.png"
run icp-fuse "$data/rgbd/7scenes_redkitchen_f000-299" --frames 0:100 --eval auto --emit trajectory,plot \
  --output-dir "$tmp/fuse" > /dev/null
cp "$tmp/fuse/"*/trajectory.png "$out/icp-fuse.png" 2>/dev/null || cp "$tmp/fuse/trajectory.png" "$out/icp-fuse.png"
ls -l "$out"
