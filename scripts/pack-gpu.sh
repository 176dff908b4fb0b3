#!/usr/bin/env bash
# Here (the dev machine): builds the `gpu` preset (sm_90, no OpenCV/PCL) and packs what the GPU machine
# needs into .carry/gpu (ignored by git): test and benchmark executables, the CTest files, the real data.
# Then, through the device tool: run `bash scripts/gpu-check.sh .carry/gpu` with carry [".carry/gpu"].
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cmake --preset gpu >/dev/null
cmake --build --preset gpu
build="$root/build/gpu"
out="$root/.carry/gpu"
rm -rf "$out"
mkdir -p "$out"
(cd "$build" && find . \( -name CTestTestfile.cmake -o \( -type f -perm -u+x \( -name 'test_*' -o -name 'bench_*' \) \) \) -print0 |
  xargs -0 -I{} cp --parents {} "$out/")
cp tests/bench/*.py "$out/" 2>/dev/null || true
echo "$build" >"$out/BUILD_DIR"
data="${S3D_DATA_DIR:-$root/../shared/data}"
if [ -d "$data" ]; then
  mkdir -p "$out/data" && cp -r "$data/." "$out/data/"
  echo "$(cd "$data" && pwd)" >"$out/DATA_DIR"
fi
du -sh "$out"
