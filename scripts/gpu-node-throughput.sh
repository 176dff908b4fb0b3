#!/usr/bin/env bash
# Throughput of one GPU node (docs/PERFORMANCE.md, "One node"): sgm-depth over N KITTI-size pairs (PNG -> PFM,
# `sgm`; PNG -> KITTI 16-bit PNG, `sgmpng`) and pc-sample fps over N clouds of 115k points (the KITTI scan)
# (KITTI .bin -> .bin, 4096 samples), from local disk, as (a) one process on GPU 0 and, on a node with G >= 2
# GPUs, (b) G processes, one per GPU (`--shard i/G --device cuda:i`, the host's cores split between them) and
# (c) one process over all GPUs (`--device cuda:all`; sgm-depth). For each run: wall clock, items/s, each GPU's
# busy fraction (nvidia-smi, sampled every 100 ms while the run runs), the stage split from the summaries and a
# digest of every output file (equal across the configurations of a tool: the same bytes whatever the
# GPUs); the shards' reports are merged with `TOOL report`, which must find every item ok.
#   Here:   bash scripts/pack-gpu-cli.sh             (-> .carry/cli)
#   There:  bash scripts/gpu-node-throughput.sh [N]  (device tool, carry [".carry/cli"]; logs in $OUT)
# Environment: RUNS (default 3) runs per configuration; TOOLS (default "sgm sgmpng fps"); FPS_BATCH (pc-sample's
# --batch; default: the tool's).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
carry="$root/.carry/cli"
n="${1:-500}" runs="${RUNS:-3}" tools="${TOOLS:-sgm sgmpng fps}"
out="${OUT:-$PWD/gpu-node-out}"
W=$(mktemp -d /tmp/s3d-node.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$out" "$W/rt" && tar xJf "$carry/bundle.tar.xz" -C "$W/rt" || exit 1
export LD_LIBRARY_PATH="$W/rt/lib"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
cores=$(nproc)
echo "host: $cores cores, $gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)"

# The inputs: copies of the carried pair and scan under distinct names, on local disk (and so in the page cache).
mkdir -p "$W/kitti/image_2" "$W/kitti/image_3" "$W/clouds"
for i in $(seq 0 $((n - 1))); do
  name=$(printf '%06d' "$i")
  cp "$carry/data/stereo_left.png" "$W/kitti/image_2/${name}_10.png"
  cp "$carry/data/stereo_right.png" "$W/kitti/image_3/${name}_10.png"
  cp "$carry/data/000000.bin" "$W/clouds/$name.bin"
done
sync

# tool_command TOOL OUTDIR: the command of one process, without the shard and device flags.
tool_command() {
  case $1 in
    sgm) echo "$W/rt/bin/sgm-depth $W/kitti -o $2/{/.}.pfm --emit disparity" ;;
    sgmpng) echo "$W/rt/bin/sgm-depth $W/kitti -o $2/{/.}.png --emit disparity" ;;
    fps) echo "$W/rt/bin/pc-sample fps -n 4096 $W/clouds --output-dir $2${FPS_BATCH:+ --batch $FPS_BATCH}" ;;
  esac
}

# One run of TOOL as P processes (P = 1: GPU 0 alone), or (P = all) one process on every GPU; prints one table
# row, keeps the reports.
run_config() {
  local tool=$1 procs=$2 r=$3 threads label="$1 x$2 run $3"
  local devices=() shards=()
  if [ "$procs" = all ]; then
    devices=(cuda:all) shards=(0/1) threads=$cores
  else
    for g in $(seq 0 $((procs - 1))); do devices+=("cuda:$g") shards+=("$g/$procs"); done
    threads=$((cores / procs))
  fi
  rm -rf "$W/out" "$W/reports" && mkdir -p "$W/out" "$W/reports"
  nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 100 >"$W/util.csv" 2>/dev/null &
  local sampler=$!
  local t0 t1 rc=0 pids=()
  t0=$(date +%s%N)
  for g in "${!devices[@]}"; do
    # shellcheck disable=SC2046
    $(tool_command "$tool" "$W/out") --device "${devices[$g]}" --shard "${shards[$g]}" --threads "$threads" \
      --report "$W/reports/$g.jsonl" -q 2>>"$out/stderr.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  t1=$(date +%s%N)
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  local exe=sgm-depth
  [ "$tool" = fps ] && exe=pc-sample
  local digest
  digest=$(cd "$W/out" && find . -type f -print0 | sort -z | xargs -0 md5sum | md5sum | cut -c1-12)
  "$W/rt/bin/$exe" report "$W"/reports/*.jsonl -o "$W/merged.jsonl" 2>>"$out/stderr.log" || rc=1
  mkdir -p "$out/reports/$tool-x$procs-$r" && cp "$W"/reports/*.jsonl "$W/merged.jsonl" "$out/reports/$tool-x$procs-$r/"
  cp "$W/util.csv" "$out/reports/$tool-x$procs-$r/util.csv"
  python3 - "$label" $((t1 - t0)) "$W/merged.jsonl" "$W/util.csv" "$([ "$procs" = all ] && echo "$gpus" || echo "$procs")" "$rc" "$W/reports" "$digest" <<'PY' | tee -a "$out/summary.txt"
import glob, json, sys
label, wall_ns, merged, util, procs, rc, reports, digest = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6], sys.argv[7], sys.argv[8]
s = [json.loads(l) for l in open(merged) if l.strip()][-1]
wall = wall_ns / 1e9
ok = max(s["ok"], 1)
busy = {}
for line in open(util):
    try:
        g, u = (int(x) for x in line.split(","))
    except ValueError:
        continue
    busy.setdefault(g, []).append(u)
gpu = " ".join(f"gpu{g} {sum(v) / len(v):.0f}%" for g, v in sorted(busy.items()) if g < procs)
handle = sum(json.loads(l)["handle_seconds"] for f in glob.glob(reports + "/*.jsonl")
             for l in open(f) if l.strip() and json.loads(l)["type"] == "summary")
stages = " ".join(f"{k} {1e3 * v / ok:.2f}" for k, v in sorted(s.get("stage_seconds", {}).items()))
summaries = [json.loads(l) for f in glob.glob(reports + "/*.jsonl") for l in open(f)
             if l.strip() and json.loads(l)["type"] == "summary"]
inside = max(x["seconds"] for x in summaries)
waits = sum(x.get("load_wait_seconds", 0.0) for x in summaries)
print(f"| {label} | {s['ok']}/{s['total_items']} ok (exit {rc}) | {wall:.2f} s ({inside:.2f} in-process) | "
      f"{s['ok'] / wall:.1f}/s ({s['ok'] / inside:.1f}) | {gpu} | handler {1e3 * handle / ok:.2f}, load wait "
      f"{1e3 * waits / ok:.2f} ms/item | {stages} | {digest} |")
PY
}

echo "| run | items | wall | items/s (in-process) | GPU busy (mean of 100 ms samples) | main thread | ms/item by stage (thread time) | outputs |" | tee "$out/summary.txt"
echo "|---|---|---|---|---|---|---|---|" | tee -a "$out/summary.txt"
for tool in $tools; do
  configs="1"
  [ "$gpus" -ge 2 ] && configs="1 $gpus"
  [ "$gpus" -ge 2 ] && [ "$tool" != fps ] && configs="$configs all"  # pc-sample runs on one device a process
  for procs in $configs; do
    for r in $(seq 1 "$runs"); do run_config "$tool" "$procs" "$r"; done
  done
done
[ "$gpus" -ge 2 ] || echo "one GPU: the one-process-per-GPU runs (b) need a node with 2 or more GPUs" | tee -a "$out/summary.txt"
