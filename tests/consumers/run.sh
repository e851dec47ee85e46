#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and runs kiln's three kinds of consumer, as its users would: an
# installed kiln found by find_package(kiln), the same through pkg-config
# (static and shared libkiln each), and kiln built from source beside the
# consumer with add_subdirectory. Each consumer is examples/scale.c, run on
# the default device (lavapipe where there is no GPU), and
# examples/wave_levels.c, libkiln-wave's (found by find_package(kiln
# COMPONENTS wave) and pkg-config's kiln-wave). Also builds a shared Debug
# build of everything, a corner of the build matrix no other run takes.
# Ends with "N passed, N failed"; exits non-zero on any failure.
#
#   bash tests/consumers/run.sh        (work folder: build-consumers/)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${KILN_CONSUMERS_DIR:-$root/build-consumers}
rm -rf "$work"
mkdir -p "$work"
example=$root/examples/scale.c
wave_example=$root/examples/wave_levels.c
passed=0
failed=0

# step NAME COMMAND...: runs COMMAND, its output in $work/NAME.log.
step() {
  local name=$1
  shift
  if "$@" >"$work/$name.log" 2>&1; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name (last lines of $work/$name.log:)"
    tail -25 "$work/$name.log"
  fi
}

lib_only=(-DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TOOLS=OFF -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF
          -DKILN_BUILD_EXAMPLES=OFF)
# pkg-config is asked plainly (`pkg-config --cflags --libs kiln`, as a
# user types it) for both kinds, and with --static for the static one.
for kind in static shared; do
  shared=OFF
  pc_static=()
  if [ $kind = shared ]; then
    shared=ON
  fi
  prefix=$work/prefix-$kind
  step "install-$kind" bash -c "cmake -S '$root' -B '$work/lib-$kind' ${lib_only[*]} -DBUILD_SHARED_LIBS=$shared &&
                                cmake --build '$work/lib-$kind' -j2 && cmake --install '$work/lib-$kind' --prefix '$prefix'"
  libdirs=$(ls -d "$prefix"/lib* 2>/dev/null | tr '\n' ':')
  pcdirs=$(ls -d "$prefix"/lib*/pkgconfig 2>/dev/null | tr '\n' ':')
  step "find_package-$kind" bash -c "cmake -S '$root/tests/consumers/find_package' -B '$work/fp-$kind' \
                                       -DCMAKE_PREFIX_PATH='$prefix' -DKILN_EXAMPLE='$example' \
                                       -DKILN_WAVE_EXAMPLE='$wave_example' &&
                                     cmake --build '$work/fp-$kind' && LD_LIBRARY_PATH='$libdirs' '$work/fp-$kind/scale' &&
                                     LD_LIBRARY_PATH='$libdirs' '$work/fp-$kind/wave_levels' | grep -q '^reference  built'"
  step "pkg-config-$kind" bash -c "flags=\$(PKG_CONFIG_PATH='$pcdirs' pkg-config ${pc_static[*]} --cflags --libs kiln) &&
                                   echo \"cc ... \$flags\" && cc -std=c11 '$example' -o '$work/pc-$kind' \$flags &&
                                   LD_LIBRARY_PATH='$libdirs' '$work/pc-$kind'"
  if [ $kind = static ]; then
    step "pkg-config-static-flag" bash -c "flags=\$(PKG_CONFIG_PATH='$pcdirs' pkg-config --static --cflags --libs kiln) &&
                                           cc -std=c11 '$example' -o '$work/pcs-$kind' \$flags && '$work/pcs-$kind'"
  fi
  # Installed files name no path of the machine that built them.
  step "relocatable-$kind" bash -c "! grep -rn -e '/usr/lib' -e '$root' '$prefix'/lib*/pkgconfig '$prefix'/lib*/cmake"
  step "pkg-config-wave-$kind" bash -c "flags=\$(PKG_CONFIG_PATH='$pcdirs' pkg-config ${pc_static[*]} --cflags --libs kiln-wave) &&
                                        echo \"cc ... \$flags\" && cc -std=c11 '$wave_example' -o '$work/pcw-$kind' \$flags &&
                                        LD_LIBRARY_PATH='$libdirs' '$work/pcw-$kind' | grep -q '^reference  built'"
done
# The build matrix a user may pick, its other corners built elsewhere by
# scripts/test.sh (static, everything, RelWithDebInfo; static, everything,
# Debug under ASan) and above (static and shared, the library alone,
# Release): a shared Debug build of everything (tool, tests, benchmarks,
# examples) builds.
step build-shared-debug-everything bash -c "cmake -S '$root' -B '$work/all-shared' -DCMAKE_BUILD_TYPE=Debug \
                                              -DBUILD_SHARED_LIBS=ON && cmake --build '$work/all-shared' -j2"
step subdirectory bash -c "cmake -S '$root/tests/consumers/subdirectory' -B '$work/sub' -DCMAKE_BUILD_TYPE=Release \
                             -DKILN_SOURCE='$root' && cmake --build '$work/sub' -j2 && '$work/sub/scale' &&
                             '$work/sub/wave_levels' | grep -q '^reference  built'"
# The shared library's exports: kiln_* alone.
# The soname moves with every 0.x minor version (docs/abi.md).
minor=$(sed -n 's/^#define KILN_VERSION_MINOR \([0-9]*\).*/\1/p' "$root/include/kiln.h")
so=$(ls "$work"/prefix-shared/lib*/libkiln.so.0.$minor 2>/dev/null | head -1)
step shared-soname sh -c "readelf -d '${so:-libkiln.so.0.$minor not installed}' | grep -q 'SONAME.*\[libkiln.so.0.$minor\]'"
step shared-exports sh "$root/cmake/exports.sh" "${so:-libkiln.so.0.$minor not installed}" "$root/include/kiln.h" \
  kiln_ KILN_API "^(wave_|g?elf(32|64)?_)" "^(tp_ring_read|tp_ring_publish|tp_heartbeat_start|tp_peer_check|stream_get)$"
so=$(ls "$work"/prefix-shared/lib*/libkiln-wave.so.0.$minor 2>/dev/null | head -1)
step shared-exports-wave sh "$root/cmake/exports.sh" "${so:-libkiln-wave.so.0.$minor not installed}" \
  "$root/include/kiln_wave.h" kiln_wave_ KILN_WAVE_API
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
