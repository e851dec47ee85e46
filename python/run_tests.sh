#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs kiln's Python tests: builds the shared library into build-py/ if it
# is missing (only the library: no tools, tests, benchmarks or examples),
# then runs /usr/bin/python3 -m pytest on python/tests with KILN_LIBRARY
# pointing at it, the validation layer on and a throwaway archive folder.
# /usr/bin/python3 because Debian's python3-cffi, python3-numpy and
# python3-pytest serve that interpreter (another python3 may come first on
# PATH). Ends with "N passed, N failed" from pytest's summary; a pytest that
# did not run (or ran nothing) counts as one failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
minor=$(sed -n 's/^#define KILN_VERSION_MINOR \([0-9]*\).*/\1/p' "$root/include/kiln.h")
lib="$root/build-py/libkiln.so.0.$minor"
if [ ! -e "$lib" ] || [ -n "$(find "$root/src" "$root/include" -newer "$lib" -print -quit)" ]; then
    cmake -S "$root" -B "$root/build-py" -DBUILD_SHARED_LIBS=ON -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF \
        -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_TOOLS=OFF >/dev/null && cmake --build "$root/build-py" -j2 >/dev/null \
        || { echo "run_tests: building $lib failed"; echo "0 passed, 1 failed"; exit 1; }
fi
arc=$(mktemp -d); trap 'rm -rf "$arc"' EXIT
out=$(cd "$here" && KILN_LIBRARY="$lib" KILN_VALIDATION=1 KILN_ARCHIVE_DIR="$arc" \
    timeout 300 /usr/bin/python3 -m pytest -q -p no:cacheprovider tests 2>&1)
rc=$?
echo "$out"
summary=$(echo "$out" | grep -E '(passed|failed|errors?|no tests ran).* in [0-9.]+s' | tail -1)
passed=$(echo "$summary" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || true)
failed=$(echo "$summary" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+' || true)
errors=$(echo "$summary" | grep -oE '[0-9]+ errors?' | grep -oE '[0-9]+' || true)
passed=${passed:-0} failed=$(( ${failed:-0} + ${errors:-0} ))
if [ $rc -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi   # pytest did not run, or crashed
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
