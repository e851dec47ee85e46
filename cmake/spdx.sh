#!/bin/sh
# SPDX-License-Identifier: MIT
# spdx.sh [--add] ROOT: every source file of kiln carries the line
# "SPDX-License-Identifier: MIT" (LICENSE) in its first two lines: C, C++,
# OpenCL, Promela and X-macro files as "/* SPDX-License-Identifier: MIT */",
# shell, Python and CMake files as "# SPDX-License-Identifier: MIT" (after
# a shebang where there is one). Lists the files without it and fails,
# ending "N passed, N failed"; --add writes the line into them instead.
set -eu
add=0
if [ "${1:-}" = "--add" ]; then add=1; shift; fi
root=$1
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files)
else
  files=$(find . -type f ! -path './build*' ! -path './.git/*' | sed 's|^\./||')
fi
missing=0
checked=0
for f in $files; do
  case "$f" in
    tests/fuzz/corpus/*|*/corpus/*) continue ;;
    *.c|*.h|*.cpp|*.def|*.cl|*.pml) style=c ;;
    *.sh|*.py|*.cmake|*/CMakeLists.txt|CMakeLists.txt|*.cmake.in|*.pc.in|*.bash) style=hash ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue
  checked=$((checked + 1))
  if head -n 2 "$f" | grep -q "SPDX-License-Identifier: MIT"; then
    continue
  fi
  if [ $add = 1 ]; then
    tmp=$f.spdx.tmp
    if [ $style = c ]; then
      { echo "/* SPDX-License-Identifier: MIT */"; cat "$f"; } >"$tmp"
    elif head -n 1 "$f" | grep -q '^#!'; then
      { head -n 1 "$f"; echo "# SPDX-License-Identifier: MIT"; tail -n +2 "$f"; } >"$tmp"
    else
      { echo "# SPDX-License-Identifier: MIT"; cat "$f"; } >"$tmp"
    fi
    chmod --reference="$f" "$tmp" 2>/dev/null || true
    mv "$tmp" "$f"
  else
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
done
if [ $add = 1 ]; then
  echo "spdx: $checked files checked"
  exit 0
fi
echo "spdx: $checked source files, $missing without the SPDX line"
if [ $missing -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; exit 1; fi
