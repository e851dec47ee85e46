#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds kiln's libFuzzer targets (clang, libkiln instrumented, ASan+UBSan)
# into build-fuzz and runs each for SECONDS (default 20), starting from its
# corpus in tests/fuzz/corpus/<target>. New inputs go to build-fuzz/corpus/
# unless --merge is given, which adds them to the repository's corpus.
#
#   bash scripts/fuzz.sh [--merge] [SECONDS] [TARGET...]
#
# KILN_FUZZ_RUNS=N stops each target after N executions instead (SECONDS
# still bounds it).
#
# Ends with "N passed, N failed" (one per target); a crash, leak, timeout
# or sanitizer report fails its target and leaves the input in build-fuzz/.
set -uo pipefail
cd "$(dirname "$0")/.."
merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
secs=${1:-20}
shift || true
B=build-fuzz
CC=clang CXX=clang++ cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON -DKILN_WERROR=ON >/dev/null || exit 1
targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -a targets < <(tr ';' ' ' <$B/fuzz-targets.txt)
cmake --build $B -j2 --target "${targets[@]}" >/dev/null || { cmake --build $B -j2 --target "${targets[@]}"; exit 1; }
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
passed=0 failed=0
for t in "${targets[@]}"; do
  seeds=$PWD/tests/fuzz/corpus/$t
  work=$PWD/$B/corpus/$t
  mkdir -p "$work" "$seeds" $B/crashes
  if [ $merge = 1 ]; then dirs=("$seeds"); else dirs=("$work" "$seeds"); fi
  echo "== $t: ${secs}s"
  runs=()
  [ -n "${KILN_FUZZ_RUNS:-}" ] && runs=(-runs="$KILN_FUZZ_RUNS")
  if (cd $B && "./tests/fuzz/$t" -max_total_time="$secs" "${runs[@]}" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix=crashes/ -print_final_stats=1 "${dirs[@]}") >$B/$t.log 2>&1; then
    grep -E "stat::number_of_executed_units|cov:" $B/$t.log | tail -2
    passed=$((passed + 1))
  else
    tail -40 $B/$t.log
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
