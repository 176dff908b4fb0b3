#!/usr/bin/env bash
# There (the GPU machine): runs a packed `gpu` build (scripts/pack-gpu.sh): ctest -L gpu, then
# compute-sanitizer memcheck and racecheck over the GPU test executables, then the benchmarks (bench_sgm with
# libSGM built from the packed peer sources and timed in the same run).
# Logs and JSON go to $OUT (or ./gpu-check-out); a short table is printed last.
# Narrowing: S3D_SANITIZE_ONLY=REGEX (test executables run under the sanitizers), S3D_SKIP_NMS_BENCH=1.
set -uo pipefail
pack="$(cd "${1:-.carry/gpu}" && pwd)"
out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
# CTest files hold the dev machine's absolute paths: point them at this copy.
old_build="$(cat "$pack/BUILD_DIR")"
find "$pack" -name CTestTestfile.cmake -exec sed -i "s#${old_build}#${pack}#g" {} +
if [ -f "$pack/DATA_DIR" ]; then
  old_data="$(cat "$pack/DATA_DIR")"
  find "$pack" -name CTestTestfile.cmake -exec sed -i "s#S3D_DATA_DIR=[^\";]*#S3D_DATA_DIR=${pack}/data#g" {} +
  export S3D_DATA_DIR="$pack/data"
fi
[ -d "$pack/pgm" ] && export S3D_SGM_PGM_DIR="$pack/pgm"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/device.txt"

declare -A result
(cd "$pack" && ctest -L gpu --output-on-failure --timeout 600) 2>&1 | tee "$out/ctest.log"
result[ctest]=$([ "${PIPESTATUS[0]}" -eq 0 ] && echo pass || echo FAIL)

# The kernel tests again with every fast path forced onto its pre-sm_80 fallback (pack-gpu.sh, gpu-portable).
if [ -d "$pack/portable" ]; then
  status=pass
  for t in "$pack"/portable/*; do
    "$t" --gtest_brief=1 >"$out/portable-$(basename "$t").log" 2>&1 || { status=FAIL; echo "portable failed: $(basename "$t")"; }
    tail -3 "$out/portable-$(basename "$t").log"
  done
  result[portable_fallbacks]=$status
fi

# The executables of the tests labelled gpu (others may need libraries the GPU machine lacks).
tests=$(cd "$pack" && ctest -L gpu -N | awk '/Test +#/{print $3}' | sort -u |
  while read -r name; do find "$pack/tests" -type f -perm -u+x -name "$name" | head -1; done)
for tool in memcheck racecheck; do
  status=pass
  for t in $tests; do
    # S3D_SANITIZE_ONLY (a regex on the executable name) narrows the sanitizer runs, e.g. to test_stereo
    [ -n "${S3D_SANITIZE_ONLY:-}" ] && ! basename "$t" | grep -Eq "$S3D_SANITIZE_ONLY" && continue
    # CUDA cases only, without the multi-million-element ones (minutes under the sanitizers) and the
    # deliberate out-of-memory test (memcheck reports its failed cudaMallocAsync as an API error).
    filter="${S3D_SANITIZER_FILTER:-*cuda*:*Cuda*:*CUDA*:*DeviceBuffer*:*Layout*:*WarpReduce*:-*TwoMillion*:*LargeSingleGroup*:*ImpossibleAllocation*:*LargeCloud*:*RealAerialScan*}"
    # API errors are not reported: the tests provoke some on purpose (an invalid device, a capture-breaking call,
    # a kernel without an image) and check the typed exception each becomes; memory errors and races still fail.
    compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 "$t" --gtest_brief=1 \
      --gtest_filter="$filter" >"$out/${tool}-$(basename "$t").log" 2>&1 ||
      { status=FAIL; echo "$tool failed: $(basename "$t")"; grep -m5 -E "=========|FAILED" "$out/${tool}-$(basename "$t").log"; }
  done
  result[$tool]=$status
done

bench="$pack/tests/bench"
if [ -x "$bench/bench_nms" ] && [ -z "${S3D_SKIP_NMS_BENCH:-}" ]; then
  mot="${S3D_DATA_DIR:-}/detections/mot15_frcnn_sort"
  dump="$(mktemp -d)"
  "$bench/bench_nms" --out "$out/bench_nms.json" --dump "$dump" ${S3D_DATA_DIR:+--mot "$mot"} 2>&1 | tee "$out/bench_nms.log"
  result[bench_nms]=$([ "${PIPESTATUS[0]}" -eq 0 ] && echo ran || echo FAIL)
  if python3 -c 'import torchvision' 2>/dev/null; then
    python3 "$pack/nms_torchvision.py" --dump "$dump" --s3d "$out/bench_nms.json" --out "$out/nms_compare.json" 2>&1 |
      tee "$out/nms_torchvision.log"
    result[nms_torchvision]=$([ "${PIPESTATUS[0]}" -eq 0 ] && echo ran || echo FAIL)
  fi
  rm -rf "$dump"
fi
if [ -x "$bench/bench_sgm" ]; then
  "$bench/bench_sgm" "$out/bench_sgm.json" 2>&1 | tee "$out/bench_sgm.log"
  result[bench_sgm]=$([ "${PIPESTATUS[0]}" -eq 0 ] && echo ran || echo FAIL)
  # Its peer in the same run: libSGM 3.1 on bench_sgm's sizes (subpixel on, LR check off and on).
  if [ -d "$pack/peers/libSGM" ] && [ -f "$out/bench_sgm.json" ]; then
    if bash "$pack/peers/build.sh" -o "$pack/peers/build" libsgm >"$out/libsgm_build.log" 2>&1 &&
      bash "$pack/peers/bench_sgm.sh" --lr both 1024x440:128:4:sub 1024x440:128:8:sub 1242x375:128:8:sub \
        1242x375:256:8:sub 1920x1080:128:8:sub 1920x1080:256:8:sub >"$out/libsgm.jsonl" 2>"$out/libsgm.log"; then
      python3 "$pack/sgm_libsgm.py" --s3d "$out/bench_sgm.json" \
        --libsgm "$out/libsgm.jsonl" --out "$out/sgm_libsgm.json" 2>&1 | tee "$out/sgm_libsgm.log"
      result[sgm_vs_libsgm]=$([ "${PIPESTATUS[0]}" -eq 0 ] && echo ran || echo FAIL)
    else
      result[sgm_vs_libsgm]=FAIL
      tail -5 "$out/libsgm_build.log" "$out/libsgm.log"
    fi
  fi
fi
if [ -x "$bench/bench_sgm_pipeline" ]; then
  "$bench/bench_sgm_pipeline" "$out/bench_sgm_pipeline.json" 2>&1 | tee "$out/bench_sgm_pipeline.log"
  result[bench_sgm_pipeline]=$([ "${PIPESTATUS[0]}" -eq 0 ] && echo ran || echo FAIL)
fi

echo
echo "== gpu-check summary ($(cat "$out/device.txt")) =="
for k in "${!result[@]}"; do printf '%-24s %s\n' "$k" "${result[$k]}"; done | sort
