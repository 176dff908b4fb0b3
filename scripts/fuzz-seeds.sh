#!/usr/bin/env bash
# Fills build/fuzz/corpus/<target>/ with seeds: the synthetic ones committed in tests/fuzz/seeds/, the inputs
# kept in tests/fuzz/regressions/, and small real files picked from the shared data (S3D_DATA_DIR, default
# ../shared/data; skipped when absent). Real data is only copied into build/, never into the repository.
# Files already in a corpus (what earlier runs found) are kept. Usage: scripts/fuzz-seeds.sh [CORPUS_ROOT]
set -euo pipefail
cd "$(dirname "$0")/.."
root="${1:-build/fuzz/corpus}"
data="${S3D_DATA_DIR:-../shared/data}"
mkdir -p "$root"

for dir in tests/fuzz/seeds/*/ tests/fuzz/regressions/*/; do
  [ -d "$dir" ] || continue
  target="$(basename "$dir")"
  mkdir -p "$root/$target"
  cp -n "$dir"* "$root/$target/" 2>/dev/null || true
done

# seed TARGET FILE [PREFIX_BYTE_OCTAL] [head args...]: copies FILE (or its head), a prefix byte first for the
# targets whose first byte chooses options (boxes_*, calib).
seed() {
  local target="$1" file="$2" prefix="$3"
  shift 3
  [ -f "$file" ] || return 0
  mkdir -p "$root/$target"
  local out="$root/$target/real-$(echo "$file" | tr '/' '_')"
  { [ -z "$prefix" ] || printf "\\$prefix"; if [ $# -gt 0 ]; then head "$@" "$file"; else cat "$file"; fi; } > "$out"
}

if [ ! -d "$data" ]; then
  echo "fuzz-seeds: no data at $data: synthetic seeds only" >&2
else
  # Images: PNGs under 60 KB (8-bit Middlebury masks and ground truth, 16-bit depth).
  while IFS= read -r f; do seed png "$f" ""; seed kitti_disparity "$f" ""; done < <(
    find "$data/stereo" "$data/rgbd" -name '*.png' -size -60k 2>/dev/null | sort | head -n 12)
  seed kitti_disparity "$data/stereo/kitti2015/000005_10/gt_disparity.png" ""
  seed pfm "$data/stereo/synthetic_flyingthings3d/0006/Disparity/0006.pfm" "" -c 65536
  # Calibration (first byte 0: read as .txt).
  while IFS= read -r f; do seed calib "$f" 000; done < <(
    find "$data" \( -iname 'calib*.txt' -o -name 'Q.dat' -o -name '*_calib.txt' -o -name 'info.txt' \
      -o -name 'camera-intrinsics.txt' \) 2>/dev/null | sort | head -n 12)
  # Point clouds: small files whole, the first 64 KB of larger ones (header + some data).
  for f in "$data"/pointclouds/*/*.ply; do seed ply "$f" "" -c 65536; done
  for f in "$data"/pointclouds/pcl_pcd/*.pcd; do
    if [ "$(stat -c %s "$f")" -le 160000 ]; then seed pcd "$f" ""; else seed pcd "$f" "" -c 65536; fi
  done
  for f in "$data"/pointclouds/*/*.bin; do seed kitti_bin "$f" "" -c 8192; done
  # Boxes: the first 60 lines of each file (first byte 0: default options).
  while IFS= read -r f; do
    case "$f" in
      *.csv) seed boxes_csv "$f" 000 -n 60 ;;
      *.json) seed boxes_coco "$f" 000 -c 8192 ;;
      *det.txt) seed boxes_mot "$f" 000 -n 60 ;;
    esac
  done < <(find "$data/detections" -type f \( -name '*.csv' -o -name '*.json' -o -name '*det.txt' \) | sort)
  while IFS= read -r f; do seed boxes_voc "$f" 000; done < <(
    find "$data/detections/voc2007_cartucho" -name '*.txt' 2>/dev/null | sort | head -n 8)
fi
for t in "$root"/*/; do printf 'fuzz-seeds: %-16s %4d files\n' "$(basename "$t")" "$(find "$t" -type f | wc -l)"; done
