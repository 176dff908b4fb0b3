#!/usr/bin/env bash
# sgm-depth end to end on the GPU machine, which has no OpenCV/PCL: pack the executable with its shared
# libraries here, carry the bundle and a few real pairs, run there.
#   Here:   scripts/gpu-cli-check.sh pack [BUILD_DIR]   -> .carry/cli (bundle + data): scripts/pack-gpu-cli.sh
#   There:  bash scripts/gpu-cli-check.sh run           (device tool, carry [".carry/cli"]; logs in $OUT)
# "run": a mixed-size batch on cuda and on cpu, outputs compared byte for byte, then 30 KITTI pairs end to
# end (PNG in, PFM out) per device, wall clock.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
carry="$root/.carry/cli"
case "${1:-}" in
  pack) exec "$root/scripts/pack-gpu-cli.sh" "${@:2}" ;;
  run)
    out="${OUT:-$PWD/gpu-cli-out}"
    mkdir -p "$out" /tmp/rt && tar xJf "$carry/bundle.tar.xz" -C /tmp/rt || exit 1
    export LD_LIBRARY_PATH=/tmp/rt/lib
    S=/tmp/rt/bin/sgm-depth D="$carry/data" W=$(mktemp -d)
    pairs="$D/stereo_left.png $D/stereo_right.png $D/cones_l.png $D/cones_r.png $D/teddy_l.png $D/teddy_r.png"
    pairs="$pairs $root/data/sample/left.png $root/data/sample/right.png $D/cones_l.png $D/cones_r.png"
    for dev in cuda cpu; do
      mkdir -p "$W/$dev"
      # shellcheck disable=SC2086
      $S --device $dev $pairs -o "$W/$dev/{#}.pfm" -o "$W/$dev/{#}_c.pfm" -o "$W/$dev/{#}_cloud.ply" \
        --calib "$D/Calib.txt" --emit disparity --emit confidence --emit cloud --json >"$out/$dev.jsonl" 2>"$out/$dev.err"
      echo "$dev: rc=$? files=$(ls "$W/$dev" | wc -l)"
    done
    same=0 diff=0
    for f in "$W"/cuda/*; do
      if cmp -s "$f" "$W/cpu/$(basename "$f")"; then same=$((same + 1)); else diff=$((diff + 1)); echo "DIFF $(basename "$f")"; fi
    done
    echo "cuda vs cpu outputs: $same identical, $diff different"
    batch=""; for _ in $(seq 30); do batch="$batch $D/stereo_left.png $D/stereo_right.png"; done
    for dev in cuda cpu; do
      mkdir -p "$W/b$dev"
      t0=$(date +%s%N)
      # shellcheck disable=SC2086
      $S --device $dev $batch -o "$W/b$dev/{#}.pfm" --emit disparity 2>>"$out/$dev.err"
      rc=$?
      t1=$(date +%s%N)
      echo "$dev: 30 KITTI pairs end to end rc=$rc $(( (t1 - t0) / 30000 )) us/pair"
    done
    t0=$(date +%s%N); $S --device cuda "$D/stereo_left.png" "$D/stereo_right.png" -o "$W/one.pfm" 2>/dev/null; t1=$(date +%s%N)
    echo "one pair, one cuda process: $(( (t1 - t0) / 1000 )) us"
    rm -rf "$W"
    [ "$diff" -eq 0 ]
    ;;
  *) echo "usage: gpu-cli-check.sh pack [BUILD_DIR] | run" >&2; exit 2 ;;
esac
