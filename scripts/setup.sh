#!/usr/bin/env bash
# Installs every system dependency of s3d from Debian 12 packages. Idempotent; run as root (or via sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libopencv-dev libpcl-dev
  libpng-dev libjpeg-dev    # the fusion tests read the real depth and colour frames with libpng / libjpeg
  libdeflate-dev            # PNG inflate in one call (src/io/src/png_grey_fast.cpp)
  libcli11-dev libspdlog-dev libfmt-dev libeigen3-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libomp-dev help2man python3 python3-venv python3-dev clang-format
  clang libclang-rt-14-dev  # the `fuzz` preset: clang++ 14 and its libFuzzer runtime (libclang_rt.fuzzer-x86_64.a)
  python3-open3d            # tests/points/open3d_fps_test.py: the FPS set equals Open3D's
  slurm-wlm munge parallel  # tests/cluster: a real single-node Slurm (scripts/slurm-local.sh) and GNU parallel
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all ${#PACKAGES[@]} packages already installed"
fi

# evo (PyPI, pinned), the trajectory evaluator tests/cli/icp_fuse_evo_test.py compares icp-fuse's evaluation with:
# a virtual environment of Debian's python3 (its numpy seen) in the checkout's .venv-evo (git-ignored), where the
# tests look for it (CMake's S3D_EVO_BIN).
EVO_VENV="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv-evo"
if [ ! -x "$EVO_VENV/bin/evo_ape" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$EVO_VENV"
  "$EVO_VENV/bin/pip" install --quiet --disable-pip-version-check evo==1.38.1
fi
echo "setup.sh: evo $("$EVO_VENV/bin/pip" show evo 2>/dev/null | sed -n 's/^Version: //p') in $EVO_VENV"

# The Python package's environment: the checkout's .venv (git-ignored), with what builds the package (nanobind,
# scikit-build-core: the README's first command installs it there) and what its tests use (numpy, pytest). torch
# (2.6 GB with its CUDA libraries) only for the s3d.torch tests: with S3D_PYTHON_TORCH=1, and in CI.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY_VENV="$ROOT/.venv"
if [ ! -x "$PY_VENV/bin/python" ]; then
  python3 -m venv "$PY_VENV"
fi
"$PY_VENV/bin/pip" install --quiet --disable-pip-version-check nanobind==3.1.0 scikit-build-core==1.1.2 \
  numpy==2.4.6 pytest==9.2.0
if [ "${S3D_PYTHON_TORCH:-0}" = 1 ] || [ "${CI:-}" = true ]; then
  "$PY_VENV/bin/pip" install --quiet --disable-pip-version-check torch==2.11.0
fi
echo "setup.sh: the Python package's environment is $PY_VENV ($("$PY_VENV/bin/python" --version))"
