#!/bin/sh
# SPDX-License-Identifier: MIT
# readme_c.sh README INCLUDE_DIR CC: compiles every ```c block of README
# (each on its own, as an object: they are functions, not programs)
# against kiln.h with warnings as errors, so the README never shows code
# that does not compile.
set -eu
readme=$1 inc=$2 cc=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
awk -v dir="$dir" '/^```c$/ { n++; out = dir "/block" n ".c"; inblock = 1; next }
                   /^```$/ { inblock = 0; next }
                   inblock { print > out }' "$readme"
passed=0 failed=0
for f in "$dir"/block*.c; do
  [ -e "$f" ] || { echo "readme_c: $readme has no \`\`\`c block"; echo "0 passed, 1 failed"; exit 1; }
  if "$cc" -std=c11 -Wall -Wextra -Werror -Wno-unused-function -I "$inc" -c "$f" -o "$f.o"; then
    passed=$((passed + 1))
  else
    echo "readme_c: the C block $(basename "$f" .c) of $readme does not compile (above)"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
