#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up (Debian packages, builds) and runs every test in a warnings-as-
# errors build, again there through a kiln server (in process, then `kiln
# serve` on a socket), again in an ASan+UBSan build, then the threaded tests
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

# The release build's suite again, every context served by a kiln server:
# one in each test process (KILN_REMOTE=inproc), then `kiln serve` on a
# socket, one server for the whole suite. Tests that reach behind the API
# run locally there (TEST_LOCAL_ONLY). Left out of both: the Spin models
# (label spin), which check the doorbell's protocol and run no kiln code.
# Left out of the socket run, whose one server owns its device, validation,
# archive and compile service for every test process at once: the
# benchmarks (label bench: they refuse to time a device with the validation
# layer on, as the server's is, and bench_compile counts a compile service
# of its own), and the tests whose assertions need a server of their
# own: example_precompile and test_archive_vk (the archive, which the
# server's is not), test_vk (device choice and forced staging), test_cli
# (the close lines and the archive of `kiln run`'s own context), and
# test_spec_constants, test_defaults and test_compile_vk (the compile
# service's counts, which other test processes add to, and its log). The
# in-process run, a server made with each test's own settings, keeps them.
remote_excluded='^(example_precompile|test_archive_vk|test_vk|cli|test_spec_constants|test_defaults|test_compile_vk)$'
remote_server_failed=0
run_remote() {   # name, KILN_REMOTE value, log, ctest arguments...
  local name=$1 remote=$2 log=$3
  shift 3
  echo "== release suite through a kiln server: $name (KILN_REMOTE=$remote, build-test)"
  (cd build-test && KILN_REMOTE=$remote ctest --output-on-failure -j2 "$@") | tee "$log"
  return "${PIPESTATUS[0]}"
}
rm -f build-test/ctest-inproc.log build-test/ctest-socket.log
if [ -x build-test/kiln ]; then
  run_remote in-process inproc build-test/ctest-inproc.log -LE spin || status=1
  sock_dir=$(mktemp -d /tmp/kiln-test-serve-XXXXXX)
  KILN_VALIDATION=1 KILN_ARCHIVE=0 build-test/kiln serve --socket "$sock_dir/kiln.sock" \
    >build-test/serve.log 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do   # up to 30 s for the socket
    [ -S "$sock_dir/kiln.sock" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -S "$sock_dir/kiln.sock" ]; then
    run_remote socket "unix:$sock_dir/kiln.sock" build-test/ctest-socket.log \
      -LE 'spin|bench' -E "$remote_excluded" || status=1
  else
    echo "kiln serve: no socket at $sock_dir/kiln.sock after 30 s (build-test/serve.log):"
    cat build-test/serve.log
  fi
  # It ends on SIGTERM; one that does not within 30 s is killed and fails.
  kill -TERM "$serve_pid" 2>/dev/null
  for _ in $(seq 300); do
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$serve_pid" 2>/dev/null && { echo "kiln serve: still running 30 s after SIGTERM; killed"; kill -KILL "$serve_pid"; }
  wait "$serve_pid"
  serve_rc=$?
  if [ "$serve_rc" -ne 0 ]; then
    echo "kiln serve: exit status $serve_rc (a crash above 128; build-test/serve.log):"
    tail -20 build-test/serve.log
    remote_server_failed=1
    status=1
  fi
  rm -rf "$sock_dir"
fi
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
for log in build-test/ctest.log build-test/ctest-inproc.log build-test/ctest-socket.log build-asan/ctest.log \
           build-tsan/ctest.log; do
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
failed=$((failed + remote_server_failed))   # kiln serve exited non-zero or crashed
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
