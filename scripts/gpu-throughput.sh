#!/usr/bin/env bash
# sgm-depth end to end on the GPU machine: pairs per second over 500 KITTI-size pairs on local disk, PNG in,
# PFM out and KITTI 16-bit PNG out, with the time split per stage from the run's summary record.
#   Here:   bash scripts/pack-gpu-cli.sh                (-> .carry/cli)
#   There:  bash scripts/gpu-throughput.sh [N_PAIRS]    (device tool, carry [".carry/cli"]; logs in $OUT)
# Environment: RUNS (default 3) runs per output format; EXTRA flags added to every sgm-depth run (e.g.
# "--prefetch 64 --threads 16"); DEVICE (default cuda).
# The pairs are copies of the carried KITTI pair under distinct names, as a KITTI folder (image_2/ +
# image_3/), written to local disk first (so they are also in the page cache: "read" is then memory speed).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
carry="$root/.carry/cli"
n="${1:-500}" runs="${RUNS:-3}" device="${DEVICE:-cuda}"
out="${OUT:-$PWD/gpu-throughput-out}"
W=$(mktemp -d /tmp/s3d-throughput.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$out" "$W/rt" && tar xJf "$carry/bundle.tar.xz" -C "$W/rt" || exit 1
export LD_LIBRARY_PATH="$W/rt/lib"
S="$W/rt/bin/sgm-depth"
mkdir -p "$W/kitti/image_2" "$W/kitti/image_3"
for i in $(seq 0 $((n - 1))); do
  name=$(printf '%06d_10.png' "$i")
  cp "$carry/data/stereo_left.png" "$W/kitti/image_2/$name"
  cp "$carry/data/stereo_right.png" "$W/kitti/image_3/$name"
done
sync
echo "host: $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
$S --version | head -3

# One summary line: pairs/s from the process wall clock, and the summary's per-stage means.
report() {
  local label=$1 wall_ns=$2 summary=$3
  python3 - "$label" "$wall_ns" "$summary" <<'PY'
import json, sys
label, wall_ns, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = [json.loads(l) for l in open(path) if l.strip()][-1]
wall = wall_ns / 1e9
ok = max(s["ok"], 1)
stages = s.get("stage_seconds", {})
split = " ".join(f"{k} {1e3 * v / ok:.2f}" for k, v in sorted(stages.items()))
print(f"{label}: {s['ok']}/{s['items']} ok, wall {wall:.2f} s, {s['ok'] / wall:.1f} pairs/s "
      f"(in-process {s['ok'] / s['seconds']:.1f} pairs/s over {s['seconds']:.2f} s); workers {s['workers']}, "
      f"prefetch {s['prefetch']}, handler busy {1e3 * s['handle_seconds'] / ok:.2f} ms/pair; "
      f"ms/pair by stage (thread time): {split}")
PY
}

status=0
for fmt in pfm png; do
  for r in $(seq 1 "$runs"); do
    rm -rf "$W/out" && mkdir -p "$W/out"
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    $S --device "$device" "$W/kitti" -o "$W/out/{/.}.$fmt" --emit disparity --report "$W/report.jsonl" -q ${EXTRA:-} \
      2>>"$out/stderr.log"
    rc=$?
    t1=$(date +%s%N)
    [ "$rc" -eq 0 ] || { echo "$fmt run $r: exit $rc (see stderr.log)"; status=1; continue; }
    files=$(find "$W/out" -type f -name "*.$fmt" | wc -l)
    [ "$files" -eq "$n" ] || { echo "$fmt run $r: $files outputs, expected $n"; status=1; }
    cp "$W/report.jsonl" "$out/report_${fmt}_$r.jsonl"
    report "PNG -> $fmt run $r" $((t1 - t0)) "$W/report.jsonl" | tee -a "$out/summary.txt"
  done
done
# Outputs are a pure function of the inputs: every copy of the pair gives the same bytes.
if [ "$(md5sum "$W"/out/*.png | awk '{print $1}' | sort -u | wc -l)" -ne 1 ]; then
  echo "PNG outputs differ between copies of the same pair"
  status=1
fi
exit $status
