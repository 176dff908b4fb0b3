#!/usr/bin/env bash
# Runs a fixed set of tool commands on the real data with two builds' executables and compares every output
# file byte for byte (and the records, less their timings): the check that a refactoring changed no result.
# Usage: scripts/compare-cli-outputs.sh OLD_BIN_DIR NEW_BIN_DIR [DATA_DIR]
#   *_BIN_DIR: folders holding pc-sample (and the other tools, when their commands are added below);
#   DATA_DIR: the shared data (default: $S3D_DATA_DIR, else ../shared/data). Exit 0 when all are identical.
set -euo pipefail
old="$(realpath "$1")" new="$(realpath "$2")"
data="$(realpath "${3:-${S3D_DATA_DIR:-$(dirname "$0")/../../shared/data}}")"
pc="$data/pointclouds"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One command per line: TOOL ARGS... with OUT standing for the output folder.
commands=(
  "pc-sample fps -n 512 --seed 3 $pc/stanford_bunny/bun_zipper.ply -o OUT/fps.ply"
  "pc-sample fps -n 300 --drop-faces $pc/stanford_bunny/bun_zipper.ply -o OUT/fps_nofaces.ply"
  "pc-sample fps -n 1000 --emit indices $pc/kitti_velodyne/000000.bin -o OUT/fps.npy"
  "pc-sample fps -n 2048 $pc/pcl_pcd/milk_color.pcd -o OUT/fps_milk.pcd"
  "pc-sample fps -n 4096 $pc/aerial_vol_total/vol_total_498868.ply -o OUT/fps_aerial.ply"
  "pc-sample voxel --voxel-size 0.1 $pc/kitti_velodyne/000000.bin -o OUT/down.bin"
  "pc-sample voxel --voxel-size 0.01 $pc/pcl_pcd/milk_color.pcd -o OUT/down_milk.pcd"
  "pc-sample voxel --voxel-size 0.005 --aggregate first $pc/stanford_bunny/bun_zipper.ply -o OUT/down_first.ply"
  "pc-sample voxel --voxel-size 0.005 --aggregate nearest $pc/stanford_bunny/bun_zipper.ply -o OUT/down_nearest.ply"
  "pc-sample voxel --voxel-size 0.05,0.05,0.1 --origin range --range 0,-40,-3,70.4,40,1 --max-points-per-voxel 5 --max-voxels 16000 --emit voxels $pc/kitti_velodyne/000000.bin -o OUT/v.npy"
  "pc-sample voxel --voxel-size 0.02 --emit voxels $pc/pcl_pcd/milk_color.pcd -o OUT/vmilk.npy"
  "pc-sample knn -k 8 $pc/stanford_bunny/bun_zipper.ply -o OUT/knn.npy"
  "pc-sample ball --radius 0.01 -k 16 $pc/stanford_bunny/bun_zipper.ply -o OUT/ball.npy"
  "pc-sample interp $pc/pcl_pcd/milk.pcd --from OUT/fps_milk.pcd -o OUT/interp_milk.pcd"
  "pc-sample interp $pc/stanford_bunny/bun_zipper_res2.ply --from $pc/stanford_bunny/bun_zipper.ply --attributes confidence,intensity -o OUT/interp_bunny.ply"
)

run_all() {
  local bin="$1" out="$2"
  mkdir -p "$out"
  local i=0
  for c in "${commands[@]}"; do
    i=$((i + 1))
    local tool="${c%% *}" args="${c#* }"
    args="${args//OUT/$out}"
    # shellcheck disable=SC2086
    "$bin/$tool" --device cpu --json $args >"$out/record_$i.jsonl" 2>"$out/stderr_$i.txt" ||
      echo "exit $?" >>"$out/stderr_$i.txt"
    # Timings and the output folder differ between runs: drop the one, name the other OUT.
    python3 -c '
import json, re, sys
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if "seconds" not in k and k not in ("items_per_second",)}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
for line in open(sys.argv[1]):
    print(json.dumps(clean(json.loads(line)), sort_keys=True).replace(sys.argv[2], "OUT"))
' "$out/record_$i.jsonl" "$out" >"$out/record_$i.norm" && rm "$out/record_$i.jsonl"
    sed -i "s#$out#OUT#g" "$out/stderr_$i.txt"
  done
}

run_all "$old" "$work/old"
run_all "$new" "$work/new"
if diff -r "$work/old" "$work/new" >"$work/diff.txt"; then
  failed="$(cat "$work/new"/stderr_*.txt | grep -c '^exit' || true)"
  echo "compare-cli-outputs: ${#commands[@]} commands ($failed failing alike), $(find "$work/new" -type f | wc -l) files, all identical"
else
  echo "compare-cli-outputs: differences:" >&2
  head -n 40 "$work/diff.txt" >&2
  exit 1
fi
