#!/bin/sh
# SPDX-License-Identifier: MIT
# check.sh INCLUDE_DIR: the public structs of kiln.h and kiln_wave.h laid
# out as this minor version recorded them (abi/<header>-<major>.<minor>.layout).
# A difference fails, showing it: within a minor version no public struct
# changes (docs/abi.md); a change is the next minor version, recorded with
#   sh abi/layout.sh include/kiln.h > abi/kiln-<major>.<minor>.layout
# Ends with "N passed, N failed"; exits 77 where clang is missing.
set -u
inc=$1
dir=$(cd "$(dirname "$0")" && pwd)
command -v clang >/dev/null || { echo "abi: clang is not installed (the layouts are clang's)"; exit 77; }
major=$(sed -n 's/^#define KILN_VERSION_MAJOR \([0-9]*\).*/\1/p' "$inc/kiln.h")
minor=$(sed -n 's/^#define KILN_VERSION_MINOR \([0-9]*\).*/\1/p' "$inc/kiln.h")
pass=0 fail=0
for h in kiln kiln_wave; do
    want="$dir/$h-$major.$minor.layout"
    if [ ! -f "$want" ]; then
        echo "FAIL $h.h: no layout recorded for $major.$minor ($want); record it with abi/layout.sh"
        fail=$((fail + 1))
        continue
    fi
    got=$(sh "$dir/layout.sh" "$inc/$h.h")
    if [ "$got" = "$(cat "$want")" ]; then
        echo "ok   $h.h: $(grep -c 'sizeof=' "$want") structs as $major.$minor recorded them"
        pass=$((pass + 1))
    else
        echo "FAIL $h.h: its structs differ from $major.$minor's ($want):"
        printf '%s\n' "$got" | diff "$want" - | head -40
        fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
