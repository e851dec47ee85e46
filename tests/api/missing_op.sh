#!/bin/sh
# SPDX-License-Identifier: MIT
# A catalogue row whose local (context/context.c: l_<name>) or remote
# (remote/client.c: r_<name>) function is missing does not build: each
# file is compiled as it is (it must build) and again with one row's
# function renamed away (it must fail, naming the function the row needs).
#
#   sh missing_op.sh CC SOURCE_DIR [CFLAGS...]
set -u
cc=$1 src=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() {   # file function cflags...
    file=$1 fn=$2
    shift 2
    base=$(basename "$file")
    if ! "$cc" -fsyntax-only -std=c11 -D_POSIX_C_SOURCE=200809L -I"$src/include" -I"$src/src" -I"$src/src/$(dirname "$file")" "$@" \
        "$src/src/$file" 2>"$tmp/as-is.log"; then
        echo "FAIL $file does not build as it is:"; head -5 "$tmp/as-is.log"; fail=$((fail + 1)); return
    fi
    sed "s/\\b$fn\\b/${fn}_gone/g" "$src/src/$file" >"$tmp/$base"
    if "$cc" -fsyntax-only -std=c11 -D_POSIX_C_SOURCE=200809L -I"$src/include" -I"$src/src" -I"$src/src/$(dirname "$file")" "$@" \
        "$tmp/$base" 2>"$tmp/gone.log"; then
        echo "FAIL $file builds without $fn"; fail=$((fail + 1))
    elif ! grep -q "$fn" "$tmp/gone.log"; then
        echo "FAIL $file without $fn fails, but does not name it:"; head -5 "$tmp/gone.log"; fail=$((fail + 1))
    else
        echo "ok   $file without $fn does not build"; pass=$((pass + 1))
    fi
}
flags="$*"
set --
for f in $flags; do set -- "$@" "$f"; done
check context/context.c l_compiles_pending "$@"
check context/context.c l_buffer_upload "$@"
check remote/client.c r_compiles_pending "$@"
check remote/client.c r_node_set_param "$@"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
