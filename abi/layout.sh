#!/bin/sh
# SPDX-License-Identifier: MIT
# layout.sh HEADER: prints the layout of every public struct HEADER defines
# (typedef struct kiln_... {), as clang lays it out for this machine: each
# field's offset, type and name, each struct's size and alignment. The ABI
# test compares it with the layout recorded for this minor version
# (abi/<header>-<major>.<minor>.layout); docs/abi.md says why.
# Exits 77 where clang is missing.
set -eu
header=$1
command -v clang >/dev/null || { echo "layout: clang is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    echo "#include \"$(basename "$header")\""
    echo "int kiln_abi_sizes[] = {"
    sed -n 's/^typedef struct \(kiln_[a-z0-9_]*\) {.*/    (int)sizeof(struct \1),/p' "$header"
    echo "};"
} >"$tmp/abi.c"
clang -I"$(dirname "$header")" -Xclang -fdump-record-layouts -fsyntax-only "$tmp/abi.c" >"$tmp/dump" 2>&1
# Keep the kiln_ records: from "0 | struct kiln_x" to its "[sizeof=...]" line.
awk '
    /^\*\*\* Dumping/ { next }
    /^ *0 \| struct kiln_/ { on = 1 }
    on && NF { sub(/^ +/, ""); print }
    on && /\[sizeof=/ { on = 0; print "" }
' "$tmp/dump"
