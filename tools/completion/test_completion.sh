#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tests tools/completion/kiln.bash: sources it, sets COMP_WORDS/COMP_CWORD
# as bash would for a command line, calls _kiln and checks that COMPREPLY
# holds (or lacks) given words. Runs in a temp folder with a few files so
# file completion has something to find. Ends with "N passed, N failed".
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
source "$here/kiln.bash"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT; cd "$tmp" || exit 1
touch blur.comp data.bin photo.png
pass=0 fail=0
# expect "WORDS OF LINE (last is the cursor word)" "has|lacks" WORD...
expect() {
    read -r -a COMP_WORDS <<<"$1"
    [[ $1 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _kiln
    local mode=$2 w ok=1; shift 2
    for w in "$@"; do
        local found=0 r
        for r in "${COMPREPLY[@]}"; do [ "$r" = "$w" ] && found=1; done
        if [ "$mode" = has ] && [ $found -eq 0 ]; then ok=0; fi
        if [ "$mode" = lacks ] && [ $found -eq 1 ]; then ok=0; fi
    done
    if [ $ok -eq 1 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: '$1' $mode $* (got: ${COMPREPLY[*]})"; fi
}
expect "kiln " has info run demo archive wave serve version help
expect "kiln serve --" has --socket --allow-uid --max-objects --max-bytes --max-compiles --max-clients --hello-timeout --compile-timeout --compile-max-bytes --mock
expect "kiln run blur.comp --remote d" has data.bin
expect "kiln demo --" has --remote
expect "kiln ar" has archive
expect "kiln run --te" has --texel-format
expect "kiln run --" has --buffer --image --out-image --push-file --json --trace --timeout
expect "kiln run b" has blur.comp
expect "kiln run blur.comp --push-file d" has data.bin
expect "kiln run blur.comp --texel-format 1=rg" has 1=rgba32f 1=rg32f
expect "kiln run blur.comp --texel-format 1=rg" lacks 1=r32f
expect "kiln run blur.comp --image 1=size:64x64:rgba1" has 1=size:64x64:rgba16f
expect "kiln run blur.comp --image 0=ph" has 0=photo.png
expect "kiln run blur.comp --buffer 0=png:p" has 0=png:photo.png
expect "kiln run blur.comp --out 0=d" has 0=data.bin
expect "kiln demo --" has --frames --size --out --precompile --json
expect "kiln demo --tonemap a" has aces
expect "kiln archive " has path ls verify compact gc
expect "kiln archive ls --" has --json --max-size
expect "kiln help " has run demo
expect "kiln info --" has --json
expect "kiln wave run k.o --k" has --kernel
expect "kiln wave run k.o --level " has reference lane wavefront auto
expect "kiln wave " has info run diff levels compare
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
