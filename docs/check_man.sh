#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that docs/kiln.1 is what scdoc makes of docs/kiln.1.scd: scdoc
# must accept the source, and its output must equal the committed page.
# The page's date (the .TH line) is taken from the committed page through
# SOURCE_DATE_EPOCH, so a regeneration on another day still compares equal.
# Regenerate with: scdoc < docs/kiln.1.scd > docs/kiln.1
# Ends with "N passed, N failed".
cd "$(dirname "$0")" || exit 1
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; }
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
day=$(sed -n 's/^\.TH "[^"]*" "[^"]*" "\([0-9-]*\)".*/\1/p' kiln.1)
epoch=$(date -ud "${day:-1970-01-01}" +%s 2>/dev/null || echo 0)
if ! command -v scdoc >/dev/null; then
    bad "scdoc is not installed (bash scripts/setup.sh installs it)"
elif SOURCE_DATE_EPOCH=$epoch scdoc <kiln.1.scd >"$tmp"; then
    ok "scdoc accepts kiln.1.scd"
    if cmp -s "$tmp" kiln.1; then ok "kiln.1 is up to date"; else
        bad "kiln.1 differs from scdoc < kiln.1.scd (regenerate it):"; diff "$tmp" kiln.1 | head -20; fi
else
    bad "scdoc failed on kiln.1.scd"
fi
if command -v man >/dev/null; then
    if MANWIDTH=80 man -l kiln.1 2>&1 | grep -q 'kiln run'; then ok "man -l kiln.1 renders"; else bad "man -l kiln.1 does not render"; fi
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
