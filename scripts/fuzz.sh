#!/usr/bin/env bash
# Builds the `fuzz` preset, seeds the corpora (scripts/fuzz-seeds.sh) and runs each libFuzzer target for
# SECONDS (default 60), FUZZ_JOBS targets at a time (default 2). Prints executions per second per target;
# exits 1 when any target found something (crash, leak, timeout, out-of-memory, sanitizer report): the
# input is kept in build/fuzz/findings/<target>/ (copy it to tests/fuzz/regressions/<target>/ once fixed).
# Logs: build/fuzz/logs/<target>.log. docs/FUZZING.md tells more.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets without the fuzz_ prefix; default all)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
jobs="${FUZZ_JOBS:-2}"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
mapfile -t all < <(cd build/fuzz/tests/fuzz && ls fuzz_* | grep -v '\.' | sed 's/^fuzz_//' | sort)
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=("${all[@]}")
bash scripts/fuzz-seeds.sh build/fuzz/corpus >/dev/null
mkdir -p build/fuzz/logs

run_one() {
  local t="$1" seconds="$2"
  local exe="build/fuzz/tests/fuzz/fuzz_$t" dict="tests/fuzz/dicts/$t.dict"
  [ -x "$exe" ] || { echo "fuzz: no target $t" >&2; return 2; }
  mkdir -p "build/fuzz/findings/$t" "build/fuzz/corpus/$t"
  local args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -close_fd_mask=3
              -artifact_prefix="build/fuzz/findings/$t/")
  [ -f "$dict" ] && args+=(-dict="$dict")
  # The parsers print nothing; what the codecs (libpng) or the frame print is silenced by -close_fd_mask,
  # libFuzzer's own lines and the sanitizers' reports still reach the log.
  local rc=0
  "$exe" "${args[@]}" "build/fuzz/corpus/$t" >"build/fuzz/logs/$t.log" 2>&1 || rc=$?
  local runs secs
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/logs/$t.log" | tail -n 1)"
  secs="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "build/fuzz/logs/$t.log" | tail -n 1)"
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz: %-16s ok       %10s runs in %4s s: %7s execs/s\n' "$t" "${runs:-?}" "${secs:-?}" \
      "$(( ${runs:-0} / (${secs:-0} > 0 ? ${secs:-1} : 1) ))"
  else
    printf 'fuzz: %-16s FINDING  (exit %d) %s; log build/fuzz/logs/%s.log\n' "$t" "$rc" \
      "$(ls build/fuzz/findings/"$t" | head -n 3 | tr '\n' ' ')" "$t"
    # The run closed stdout/stderr (-close_fd_mask): replay the input once with them open, so the log also
    # holds what the process printed before dying (an uncaught exception's what()).
    local found
    found="$(ls build/fuzz/findings/"$t"/* 2>/dev/null | head -n 1)"
    if [ -n "$found" ]; then
      { echo "=== replay of $found"; "$exe" -rss_limit_mb=2048 -timeout=10 "$found" 2>&1; } >>"build/fuzz/logs/$t.log" || true
    fi
    grep -m 4 -E 'ERROR: |runtime error:|SUMMARY:|what\(\):|ParseDictionaryFile' "build/fuzz/logs/$t.log" | sed 's/^/      /' || true
  fi
  return "$rc"
}
export -f run_one

echo "fuzz: ${#targets[@]} targets, ${seconds} s each, ${jobs} at a time"
status=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$1" "$2"' _ {} "$seconds" || status=1
if [ "$status" -ne 0 ]; then
  echo "fuzz: findings (inputs in build/fuzz/findings/)" >&2
  exit 1
fi
echo "fuzz: no findings"
