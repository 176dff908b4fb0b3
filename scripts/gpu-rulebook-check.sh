#!/usr/bin/env bash
# pc-sample rulebook on the GPU machine: --device cuda against --device cpu, .npz byte for byte, on the KITTI
# scan voxelised at 0.05 m (subm k3, k3 s2 p1, --inverse, a chain) and on 20k random voxels in 3 batches
# (anisotropic spec, a chain with inverse layers).
#   Here:   scripts/gpu-rulebook-check.sh pack [BUILD_DIR]   BUILD_DIR: a CUDA build (default build/sm90, made
#           with `cmake --preset sm90` when missing) -> .carry/rulebook (bundle + data)
#   There:  bash scripts/gpu-rulebook-check.sh run            (device tool, carry [".carry/rulebook"])
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
carry="$root/.carry/rulebook"
case "${1:-}" in
  pack)
    build="${2:-$root/build/sm90}"
    [ -f "$build/build.ninja" ] || cmake --preset sm90 >/dev/null || exit 1
    cmake --build "$build" -j2 --target pc-sample || exit 1
    "$build/apps/pc-sample" --version | grep -q '^cuda: on' || echo "gpu-rulebook-check: $build has no CUDA" >&2
    rm -rf "$carry" && mkdir -p "$carry/data"
    "$root/../shared/scripts/device-bundle" "$carry" "$build/apps/pc-sample" || exit 1
    cp "${S3D_DATA_DIR:-$root/../shared/data}/pointclouds/kitti_velodyne/000000.bin" "$carry/data/"
    python3 - "$carry/data" <<'PY'
import json, random, struct, sys
d = sys.argv[1]
rng = random.Random(5)
cells = set()
while len(cells) < 20000:
    cells.add((rng.randrange(3), rng.randrange(41), rng.randrange(160), rng.randrange(140)))
rows = list(cells)
rng.shuffle(rows)
hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, 4), }" % len(rows)
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(d + "/r.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(b"".join(struct.pack("<4i", *r) for r in rows))
net = [{"name": "subm1", "kernel": 3, "subm": True}, {"name": "down1", "kernel": 3, "stride": 2, "padding": 1},
       {"name": "subm2", "kernel": 3, "subm": True}, {"name": "down2", "kernel": 3, "stride": 2, "padding": [0, 1, 1]},
       {"name": "down3", "kernel": [3, 1, 1], "stride": [2, 1, 1]}, {"name": "up3", "inverse": "down3"},
       {"name": "up2", "inverse": "down2"}]
with open(d + "/net.json", "w") as f:
    json.dump(net, f)
PY
    du -sh "$carry"
    ;;
  run)
    rt=/tmp/rt-rulebook
    mkdir -p "$rt" && tar xJf "$carry/bundle.tar.xz" -C "$rt" || exit 1
    export LD_LIBRARY_PATH="$rt/lib"
    P="$rt/bin/pc-sample" D="$carry/data" W=$(mktemp -d) fail=0
    "$P" --version | head -3
    check() {  # name, args...
      local n=$1
      shift
      for dev in cpu cuda; do
        "$P" -q --device $dev rulebook "$@" -o "$W/$n.$dev.npz" --json >"$W/$n.$dev.json" || { echo "$n $dev: exit $?"; fail=1; }
      done
      if cmp -s "$W/$n.cpu.npz" "$W/$n.cuda.npz"; then
        echo "$n: same bytes ($(stat -c %s "$W/$n.cpu.npz") B), cuda ms: $(grep -o '"milliseconds":[0-9.e-]*' "$W/$n.cuda.json" | cut -d: -f2 | tr '\n' ' ')"
      else
        echo "$n: DIFFER"
        fail=1
      fi
    }
    check kitti_subm "$D/000000.bin" --voxel-size 0.05 --kernel 3 --subm
    check kitti_k3s2 "$D/000000.bin" --voxel-size 0.05 --kernel 3 --stride 2 --padding 1
    check kitti_inverse "$D/000000.bin" --voxel-size 0.05 --kernel 3 --stride 2 --padding 1 --inverse
    check kitti_chain "$D/000000.bin" --voxel-size 0.05 --layers "$D/net.json"
    check random_subm "$D/r.npy" --shape 41,160,140 --kernel 3 --subm
    check random_aniso "$D/r.npy" --shape 41,160,140 --kernel 3,1,5 --stride 2,1,3 --padding 1,0,2 --dilation 1,1,2
    check random_chain "$D/r.npy" --shape 41,160,140 --layers "$D/net.json"
    exit $fail
    ;;
  *)
    echo "usage: gpu-rulebook-check.sh pack [BUILD_DIR] | run" >&2
    exit 2
    ;;
esac
