#!/bin/sh
# SPDX-License-Identifier: MIT
# The call catalogue against the public header: every kiln.h call that acts
# on a context (its first parameter a kiln_context, and kiln_context_create)
# has its row X(name, ...) or L(name, ...) in calls.def, name being the
# call without its kiln_ prefix, and every row names such a call. Prints what is missing on
# either side and fails; otherwise one line of counts.
#
#   sh catalogue.sh include/kiln.h src/context/calls.def
set -eu
if [ $# -ne 2 ]; then
    echo "usage: catalogue.sh KILN_H CALLS_DEF" >&2
    exit 2
fi
header=$1
def=$2
for f in "$header" "$def"; do
    [ -r "$f" ] || { echo "catalogue: cannot read $f" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Each KILN_API declaration joined onto one line (up to its ';'), then the
# names of those whose first parameter is a kiln_context.
awk '
    /^[ \t]*KILN_API[ \t]/ { decl = ""; on = 1 }
    on { decl = decl " " $0; if (index($0, ";")) { print decl; on = 0 } }
' "$header" |
    sed -n 's/.*[ *]kiln_\([a-z0-9_]*\)[ \t]*([ \t]*kiln_context[ \t][^,)]*[,)].*/\1/p' >"$tmp/calls"
grep -q 'KILN_API.*[ *]kiln_context_create[ \t]*(' "$header" && echo context_create >>"$tmp/calls"
sort -u "$tmp/calls" -o "$tmp/calls"

# The rows: lines starting X( or L( (the header comment's examples are
# indented; a row's parameters continue on indented lines).
sed -n 's/^[XL]([ \t]*\([a-z0-9_]*\)[ \t]*,.*/\1/p' "$def" >"$tmp/rows.all"
sort "$tmp/rows.all" >"$tmp/rows.sorted"
sort -u "$tmp/rows.all" >"$tmp/rows"

fail=0
if [ ! -s "$tmp/calls" ]; then
    echo "catalogue: $header declares no call taking a kiln_context" >&2
    fail=1
fi
for name in $(comm -23 "$tmp/calls" "$tmp/rows"); do
    echo "catalogue: kiln_$name takes a context; $def has no row X($name, ...)"
    fail=1
done
for name in $(comm -13 "$tmp/calls" "$tmp/rows"); do
    echo "catalogue: $def row X($name, ...) names no call of $header taking a context (kiln_$name)"
    fail=1
done
for name in $(uniq -d "$tmp/rows.sorted"); do
    echo "catalogue: $def has more than one row X($name, ...)"
    fail=1
done
if [ $fail -ne 0 ]; then
    exit 1
fi
echo "catalogue: $(wc -l <"$tmp/calls") calls taking a context, $(wc -l <"$tmp/rows.all") rows: each call has its row"
