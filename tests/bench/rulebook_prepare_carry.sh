#!/usr/bin/env bash
# Stages the rulebook comparison for the GPU machine in .carry/rulebook (git-ignored; S3D_RULEBOOK_CARRY and
# S3D_RULEBOOK_GPU_BUILD override): s3d's bench_rulebook (from a CUDA build, sm_90), the peer kit's TorchSparse
# folder, and spconv 2.3.8 (spconv-cu126 with cumm-cu126 0.7.11, which it requires below 0.8, and their pure-Python
# dependencies) downloaded from PyPI for the GPU machine's Python 3.12 and repacked as one xz tarball (the wheels
# are 97 MB; the GPU call carries 64 MiB). Then on the GPU machine (carry .carry/rulebook):
#   bash .carry/rulebook/run.sh        # spconv, s3d and TorchSparse on the same 125,000 voxels, JSON lines in $OUT
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
carry=${S3D_RULEBOOK_CARRY:-.carry/rulebook}
gpu_build=${S3D_RULEBOOK_GPU_BUILD:-build/gpu}
pip=${PIP:-.venv/bin/pip}
cmake --build "$gpu_build" --target bench_rulebook -j2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$pip" download -q --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
  -d "$work/wheels" spconv-cu126==2.3.8 cumm-cu126==0.7.11 pccm ccimport fire lark pybind11 portalocker termcolor
mkdir -p "$work/site" "$carry"
for w in "$work"/wheels/*.whl; do python3 -m zipfile -e "$w" "$work/site"; done
tar -C "$work/site" -cf - . | xz -T2 -6 > "$carry/site.tar.xz"
cp -r ../shared/peers/torchsparse "$carry/"
cp "$gpu_build"/tests/bench/bench_rulebook "$carry/"
cp "$(/sbin/ldconfig -p | awk '/libgomp\.so\.1 /{print $NF; exit}')" "$carry/"  # the GPU machine has none
cp tests/bench/spconv_rulebook.py "$carry/"
cat > "$carry/run.sh" <<'RUN'
#!/bin/bash
C=$(dirname "$0")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/spconv-site && tar xJf "$C/site.tar.xz" -C /tmp/spconv-site
export PYTHONPATH=/tmp/spconv-site
echo "== spconv"; timeout 240 python3 "$C/spconv_rulebook.py" --kit "$C/torchsparse" --save-input "$OUT/coords.npy" \
  --runs 30 --out "$OUT/spconv.jsonl" > "$OUT/spconv.log" 2>&1; echo rc=$?; tail -5 "$OUT/spconv.log"
echo "== s3d"; LD_LIBRARY_PATH="$C" timeout 60 "$C/bench_rulebook" --npy "$OUT/coords.npy" --runs 30 > "$OUT/s3d.jsonl"; echo rc=$?
cut -c1-200 "$OUT/s3d.jsonl"
echo "== torchsparse"; (cd "$C/torchsparse" && timeout 300 python3 bench_rulebook.py --npy "$OUT/coords.npy" --runs 30 \
  --out "$OUT/torchsparse.jsonl" > "$OUT/torchsparse.log" 2>&1; echo rc=$?); tail -7 "$OUT/torchsparse.log"
RUN
chmod +x "$carry/run.sh"
du -sh "$carry"
