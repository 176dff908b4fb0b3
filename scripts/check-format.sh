#!/usr/bin/env bash
# Fails (exit 1) when a C++/CUDA file of the repository differs from what `clang-format` (the repo's
# .clang-format, Debian 12's clang-format 14) makes of it; `--fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones not yet added (not ignored): a file is formatted before its first commit too.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' |
                     grep -E '\.(cpp|hpp|cu|cuh|h)$')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from clang-format (run scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
