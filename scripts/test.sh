#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up (Debian packages, builds) and runs every test in a warnings-as-
# errors build and again in an ASan+UBSan build, then the threaded tests
# (label "threads") in a ThreadSanitizer build, then kiln's consumers
# (installed and found by CMake and pkg-config, static and shared, and
# built from source with add_subdirectory), then each libFuzzer target
# briefly (KILN_FUZZ_SECONDS, default 15) against an instrumented libkiln.
# Ends with one "N passed, N failed" line over all of them; exits non-zero
# on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1

run_suite() {   # name, build dir, ctest filter (or ""), cmake flags...
  local name=$1 dir=$2 filter=$3
  shift 3
  echo "== $name build ($dir)"
  rm -f "$dir/ctest.log"
  cmake -S . -B "$dir" "$@" >/dev/null || return 1
  cmake --build "$dir" -j2 || return 1
  (cd "$dir" && ctest --output-on-failure -j2 $filter) | tee "$dir/ctest.log"
  return "${PIPESTATUS[0]}"
}

status=0
run_suite release build-test "" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON || status=1
# LeakSanitizer: leaks inside the Vulkan driver and loader are not kiln's
# (see tests/lsan.supp); everything else is reported.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
run_suite sanitizer build-asan "" -DCMAKE_BUILD_TYPE=Debug -DKILN_WERROR=ON -DKILN_SANITIZE=address,undefined || status=1
export TSAN_OPTIONS="halt_on_error=1"
run_suite thread-sanitizer build-tsan "-L threads" -DCMAKE_BUILD_TYPE=Debug -DKILN_WERROR=ON -DKILN_SANITIZE=thread || status=1

echo "== consumers (build-consumers): kiln installed and linked three ways, static and shared"
bash tests/consumers/run.sh | tee build-consumers.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

# Suites kept beside what they test, each ending "N passed, N failed": the
# Python package, the man page, the shell completion.
extra_logs=()
for suite in python/run_tests.sh docs/check_man.sh tools/completion/test_completion.sh; do
  [ -f "$suite" ] || continue
  log=build-$(basename "$(dirname "$suite")")-suite.log
  echo "== $suite"
  bash "$suite" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  extra_logs+=("$log")
done

echo "== fuzz build (build-fuzz)"
mkdir -p build-fuzz; rm -f build-fuzz/run.log
bash scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-15}" | tee build-fuzz/run.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

passed=0
failed=0
fuzz_line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" build-fuzz/run.log 2>/dev/null | tail -1)
if [ -n "$fuzz_line" ]; then
  passed=$((passed + $(echo "$fuzz_line" | cut -d' ' -f1)))
  failed=$((failed + $(echo "$fuzz_line" | cut -d' ' -f3)))
else
  failed=$((failed + 1))   # the fuzz build did not get to run
fi
for log in build-consumers.log "${extra_logs[@]}"; do
  line=$(grep -E "^[0-9]+ passed, [0-9]+ failed$" "$log" 2>/dev/null | tail -1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  else
    failed=$((failed + 1))   # a suite that did not get to the end counts as one failure
  fi
done
for log in build-test/ctest.log build-asan/ctest.log build-tsan/ctest.log; do
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" 2>/dev/null | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))   # a suite that did not get to run counts as one failure
    continue
  fi
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/')
  t=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/')
  passed=$((passed + t - f))
  failed=$((failed + f))
done
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
