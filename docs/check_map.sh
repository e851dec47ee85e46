#!/bin/sh
# SPDX-License-Identifier: MIT
# docs/architecture.md's map of files ("## The files") against the tree:
# every source file of the libraries (src/**, include/*.h) is named there,
# and every path named there exists. Ends with "N passed, N failed".
#
#   sh docs/check_map.sh ROOT
set -u
root=$1
cd "$root" || exit 2
doc=docs/architecture.md
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sed -n '/^## The files/,$p' "$doc" | grep -o '^- `[^`]*`' | sed 's/^- `//; s/`$//' | sort >"$tmp/named"
{ find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.def' -o -name '*.cmake' -o -name '*.map' \); ls include/*.h; } |
    sort >"$tmp/tree"
missing=$(comm -13 "$tmp/named" "$tmp/tree")
gone=$(comm -23 "$tmp/named" "$tmp/tree")
fail=0
[ -n "$missing" ] && { echo "FAIL $doc's map lacks:"; echo "$missing"; fail=$((fail + 1)); }
[ -n "$gone" ] && { echo "FAIL $doc's map names what is not in the tree:"; echo "$gone"; fail=$((fail + 1)); }
[ $fail -eq 0 ] && echo "ok   $doc names the $(wc -l <"$tmp/tree") files of src/ and include/"
echo "$((fail == 0 ? 1 : 0)) passed, $fail failed"
[ $fail -eq 0 ]
