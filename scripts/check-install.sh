#!/usr/bin/env bash
# Installs a configured build tree into a temporary prefix and builds a separate CMake project against it
# with find_package(s3d): the exported package must work from outside the source tree.
set -euo pipefail
build_dir="${1:-build/default}"
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S "$root/tests/install/consumer" -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer"
echo "check-install: find_package(s3d) from $prefix works"
