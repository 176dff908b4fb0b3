#!/usr/bin/env bash
# Runs a fixed set of tool commands on the real data with two builds' executables and compares every output
# file byte for byte (and the records, less their timings): the check that a refactoring changed no result.
# Usage: scripts/compare-cli-outputs.sh OLD_BIN_DIR NEW_BIN_DIR [DATA_DIR]
#   *_BIN_DIR: folders holding the tools the commands below run (sgm-depth, nms-filter, pc-sample, icp-fuse);
#   DATA_DIR: the shared data (default: $S3D_DATA_DIR, else ../shared/data). Exit 0 when all are identical.
set -euo pipefail
old="$(realpath "$1")" new="$(realpath "$2")"
data="$(realpath "${3:-${S3D_DATA_DIR:-$(dirname "$0")/../../shared/data}}")"
pc="$data/pointclouds"
st="$data/stereo" kitti="$data/stereo/kitti2015/000005_10" odo="$data/stereo_sequences/kitti_odometry_02_f000-050"
det="$data/detections" rk="$data/rgbd/7scenes_redkitchen_f000-299" tum="$data/rgbd/tum_fr1_rpy_f000-299"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# JSON Lines rewritten in place without what differs between runs and folders: timings (keys with "seconds",
# "ms" objects and ms_per_frame, items_per_second) and the build's git revision dropped, the output folder named OUT.
cat >"$work/clean.py" <<'PY'
import json, sys
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items() if "seconds" not in k and not k.startswith("ms") and k not in ("git", "items_per_second")}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
path, folder = sys.argv[1], sys.argv[2]
lines = [json.dumps(clean(json.loads(l)), sort_keys=True).replace(folder, "OUT") for l in open(path) if l.strip()]
open(path, "w").write("".join(l + "\n" for l in lines))
PY

# A network for the rulebook chain, and one whose inverse layer cannot reach its forward layer's output.
cat >"$work/net.json" <<'JSON'
[{"name": "subm1", "kernel": 3, "subm": true}, {"name": "down1", "kernel": 3, "stride": 2, "padding": 1},
 {"name": "subm2", "kernel": 3, "subm": true}, {"name": "up1", "inverse": "down1"}, {"kernel": [3, 1, 1], "stride": [2, 1, 1]}]
JSON
cat >"$work/broken.json" <<'JSON'
[{"name": "down1", "kernel": 2, "stride": 2}, {"name": "down2", "kernel": 2, "stride": 2}, {"name": "up1", "inverse": "down1"}]
JSON

# One command per line: TOOL ARGS... with OUT standing for the output folder.
commands=(
  "sgm-depth $st/middlebury2003/cones/imL.png $st/middlebury2003/cones/imR.png -D 64 --eval $st/middlebury2003/cones/groundtruth.png --emit disparity --emit color --emit confidence --emit error -o OUT/cones.pfm -o OUT/cones_color.png -o OUT/cones_conf.png -o OUT/cones_err.png"
  "sgm-depth $kitti/stereo_left.png $kitti/stereo_right.png --calib $kitti/Calib.txt --eval $kitti/gt_disparity.png --emit disparity --emit depth --emit cloud --max-depth 40 -o OUT/k.png -o OUT/k_depth.pfm -o OUT/k.ply"
  "sgm-depth $kitti/stereo_left.png $kitti/stereo_right.png -D 192 --paths 4 --no-fill --uniqueness 5 --emit confidence --emit disparity -o OUT/k_conf.pfm -o OUT/k_x16.png --png-encoding x16"
  "sgm-depth --input-list $work/pairs.txt --calib $odo/calib.txt --emit depth --output-dir OUT/odo_depth"
  "sgm-depth --input-list $work/pairs.txt --calib $odo/calib.txt --emit depth --format png --depth-scale tum --output-dir OUT/odo_png"
  "nms-filter $det/mot15_frcnn_sort/ADL-Rundle-6.det.txt -o OUT/adl.txt"
  "nms-filter $det/coco_val2017_person4/test_coco_det_AP_H_56.json --iou 0.6 -o OUT/coco.json"
  "nms-filter $det/mot15_frcnn_sort/ETH-Bahnhof.det.txt --method soft-gaussian --min-score 0.3 -o OUT/eth_soft.txt"
  "nms-filter $det/mot15_frcnn_sort/ADL-Rundle-6.det.txt --emit indices -o OUT/adl_rows.txt"
  "nms-filter $det/voc2007_cartucho/detection-results --per-class --method soft-gaussian -o OUT/voc"
  "nms-filter $det/coco_val2017_person4/test_coco_det_AP_H_56.json --method soft-linear --emit records,drawn --draw-suppressed --image-dir $work/img -o OUT/coco_soft.json -o OUT/coco_drawn"
  "pc-sample fps -n 512 --seed 3 $pc/stanford_bunny/bun_zipper.ply -o OUT/fps.ply"
  "pc-sample fps -n 300 --drop-faces $pc/stanford_bunny/bun_zipper.ply -o OUT/fps_nofaces.ply"
  "pc-sample fps -n 1000 --emit indices $pc/kitti_velodyne/000000.bin -o OUT/fps.npy"
  "pc-sample fps -n 2048 $pc/pcl_pcd/milk_color.pcd -o OUT/fps_milk.pcd"
  "pc-sample fps -n 200 --batch 3 --start random --seed 7 $pc/stanford_bunny --emit indices --output-dir OUT/fps_batch"
  "pc-sample fps -n 40000 --batch 4 $pc/stanford_bunny --emit indices --output-dir OUT/fps_batch_fewer"
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
  "pc-sample rulebook $pc/kitti_velodyne/000000.bin --voxel-size 0.1 --kernel 3 --subm -o OUT/rb_subm.npz"
  "pc-sample rulebook $pc/kitti_velodyne/000000.bin --voxel-size 0.2 --layers $work/net.json -o OUT/net.npz"
  "pc-sample rulebook $pc/kitti_velodyne/000000.bin --voxel-size 0.2 --layers $work/broken.json -o OUT/broken.npz"
  "pc-sample rulebook OUT/v.npy --shape 80,1600,1408 --kernel 3 --stride 2 --padding 1 -o OUT/rb_down.npz"
  "icp-fuse $rk --frames 0:12 --volume-resolution 128 --color off --emit trajectory,mesh,cloud --eval auto -o OUT/rk"
  "icp-fuse $tum --frames 0:10 --intrinsics 517.3,516.5,318.6,255.3 --volume-resolution 96 --color on --eval auto -o OUT/tum"
  "icp-fuse $tum --frames 20:32 --intrinsics 517.3,516.5,318.6,255.3 --volume-resolution 96 --eval auto --emit trajectory,plot -o OUT/tum_plot"
  "icp-fuse $rk --frames 0:8 --mode f2f --volume sparse --emit trajectory,cloud -o OUT/rk_sparse"
  "icp-fuse $rk --frames 290:300 --max-lost 0 --volume-resolution 64 --volume-size 0.5 -o OUT/rk_lost"
  "icp-fuse $tum --frames 0:16 --intrinsics 517.3,516.5,318.6,255.3 --volume-resolution 96 --eval auto --eval-ranges 0:8,8: -o OUT/tum_ranges"
  "icp-fuse OUT/odo_depth --images $odo/image_l --photometric 0.02 --mode f2f --max-depth 30 --volume-size 40 --volume-resolution 64 --emit trajectory,mesh --color on -o OUT/odo_fuse"
)

# Pictures for nms-filter --emit drawn: a Middlebury image under each COCO image id the detections name.
mkdir -p "$work/img"
for id in 000000000785 000000040083 000000196141 000000197388; do cp "$st/middlebury2003/cones/imL.png" "$work/img/$id.png"; done
# Three KITTI odometry pairs for the folder outputs (depth maps with camera-intrinsics.txt, depth-scale.txt).
for f in 000000 000001 000002; do echo "$odo/image_l/$f.png $odo/image_r/$f.png"; done >"$work/pairs.txt"

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
    python3 "$work/clean.py" "$out/record_$i.jsonl" "$out" && mv "$out/record_$i.jsonl" "$out/record_$i.norm"
    sed -i "s#$out#OUT#g" "$out/stderr_$i.txt"
  done
  # Outputs that are records (frames.jsonl) carry timings too.
  find "$out" -name '*.jsonl' -exec python3 "$work/clean.py" {} "$out" \;
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
