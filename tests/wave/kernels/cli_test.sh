#!/bin/sh
# SPDX-License-Identifier: MIT
# cli_test.sh KILN CLANG KERNELS: `kiln wave info` and `kiln wave run` on
# kernels clang compiles here (exit 77, skipped, where clang lacks amdgcn):
# a 2D grid written to a zeroed buffer and read back with --out, a buffer
# given from a file reversed through a __local argument, the observation's
# magic, the refusals (exit 2) of a misspelt level, an unknown kernel
# and a value of the wrong type, and the budgets: --max-work and
# --max-seconds stop a kernel with 128 KiB of scratch per work-item
# (scratch.s) over many groups, naming the budget (exit 1), and are refused
# when not above 0; `kiln wave diff` of two levels that agree, and its
# refusals.
set -u
kiln=$1 clang=$2 dir=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-wave-cli-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
if ! "$clang" -x cl -target amdgcn-amd-amdhsa -mcpu=gfx900 -nogpulib -O2 -I"$dir" -c "$dir/memory.cl" \
     -o "$tmp/memory.o" 2>"$tmp/cc.log"; then
  echo "SKIP: $clang cannot compile OpenCL C for amdgcn-amd-amdhsa gfx900"; exit 77
fi

"$kiln" wave info "$tmp/memory.o" >"$tmp/info.txt" || fail "wave info"
grep -q "gfx900, code object v4, relocatable" "$tmp/info.txt" || fail "info: no target line"
grep -q "^kernel grid2d" "$tmp/info.txt" || fail "info: no grid2d"
"$kiln" wave info "$tmp/memory.o" --disasm | grep -q "s_endpgm" || fail "info --disasm: no s_endpgm"

# grid2d: out[y * 48 + x] = x * 1000 + y over 3x2 groups of 16x4
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 3,2 --block 16,4 --arg buf:size:1536 --arg u32:48 \
  --out 0="$tmp/out.bin" --observe "$tmp/obs.bin" --observe-json "$tmp/obs.json" 2>"$tmp/run.log" \
  || { cat "$tmp/run.log"; fail "wave run grid2d"; }
od -An -v -t u4 -w4 "$tmp/out.bin" | awk '
  { i = NR - 1; want = (i % 48) * 1000 + int(i / 48); if ($1 != want) { print "word " i ": " $1 ", expected " want; bad++ } }
  END { if (NR != 384) { print NR " words, expected 384"; exit 1 } exit bad > 0 }' || fail "grid2d's output"
[ "$(head -c 4 "$tmp/obs.bin")" = "KWOB" ] || fail "the observation's magic"
grep -q '"written": \[\[0, 1536\]\]' "$tmp/obs.json" || fail "the JSON observation's written range"

# compare: a run again is the same; another width differs, naming where
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 3,2 --block 16,4 --arg buf:size:1536 --arg u32:48 \
  --observe "$tmp/obs2.bin" 2>/dev/null || fail "wave run grid2d again"
"$kiln" wave compare "$tmp/obs.bin" "$tmp/obs2.bin" >"$tmp/cmp" || { cat "$tmp/cmp"; fail "compare: the same run"; }
grep -q "^the same" "$tmp/cmp" || fail "compare: says the same"
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 3,2 --block 16,4 --arg buf:size:1536 --arg u32:47 \
  --observe "$tmp/obs3.bin" 2>/dev/null || fail "wave run grid2d, width 47"
"$kiln" wave compare "$tmp/obs.bin" "$tmp/obs3.bin" >"$tmp/cmp"
[ $? -eq 1 ] && grep -q "^different: wave 0 (group 0,0,0 wave 0): " "$tmp/cmp" || { cat "$tmp/cmp"; fail "compare: a difference"; }
"$kiln" wave compare "$tmp/obs.bin" "$tmp/out.bin" 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "the second is not an observation" "$tmp/e" || fail "compare: not an observation"

# levels: the table, the reference first and built
"$kiln" wave levels >"$tmp/levels" || fail "wave levels"
head -1 "$tmp/levels" | grep -q "^reference *built" || fail "levels: the reference first"
grep -q "^wavefront *built" "$tmp/levels" || fail "levels: wavefront built"
grep -q "^subgroup *built" "$tmp/levels" || fail "levels: subgroup built"
grep -q "^lane *built" "$tmp/levels" || fail "levels: lane built"
grep -q "^auto .*cheapest" "$tmp/levels" || fail "levels: auto"

# auto: the cheapest level that runs the kernel, the choice and the reasons said
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 3,2 --block 16,4 --arg buf:size:1536 --arg u32:48 \
  --level auto 2>"$tmp/e" || { cat "$tmp/e"; fail "--level auto"; }
# (the Wavefront level on a CPU device, Lane on a GPU: the run says which and takes it)
chose=$(sed -n 's/^kiln wave: auto chose \([a-z]*\), the cheapest level.*/\1/p' "$tmp/e")
[ "$chose" = lane ] || [ "$chose" = wavefront ] || { cat "$tmp/e"; fail "--level auto: the choice"; }
grep -q "instructions ($chose)" "$tmp/e" || { cat "$tmp/e"; fail "--level auto: ran $chose"; }
"$kiln" wave run "$tmp/memory.o" --kernel private_array --groups 1 --arg buf:size:256 --arg i32:3 --level auto \
  2>"$tmp/e" || { cat "$tmp/e"; fail "--level auto (private_array)"; }
grep -q "auto chose reference" "$tmp/e" && grep -q "^  lane: kernel 'private_array' uses .* scratch" "$tmp/e" ||
  { cat "$tmp/e"; fail "--level auto: the reasons"; }

# reverse_local: 64 ints 0..63 from a file, reversed through LDS: 2 * (63 - t) + 1
i=0; : >"$tmp/in.bin"
while [ $i -lt 64 ]; do printf "\\$(printf %03o $i)\\000\\000\\000" >>"$tmp/in.bin"; i=$((i + 1)); done
"$kiln" wave run "$tmp/memory.o" --kernel reverse_local --groups 1 --block 64 --arg "buf:$tmp/in.bin" \
  --arg local:256 --out 0="$tmp/rev.bin" 2>"$tmp/run.log" || { cat "$tmp/run.log"; fail "wave run reverse_local"; }
od -An -v -t u4 -w4 "$tmp/rev.bin" | awk '
  { want = 2 * (63 - (NR - 1)) + 1; if ($1 != want) { print "word " NR - 1 ": " $1 ", expected " want; bad++ } }
  END { if (NR != 64) exit 1; exit bad > 0 }' || fail "reverse_local's output"

# refusals, exit 2
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 1 --arg buf:size:64 --arg u32:4 --level lanes 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "no level has that name" "$tmp/e" || fail "--level lanes (misspelt)"
"$kiln" wave run "$tmp/memory.o" --kernel nothing --groups 1 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "has no kernel 'nothing'" "$tmp/e" || fail "an unknown kernel"
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 1 --arg buf:size:64 --arg f32:4 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "does not fit argument 1" "$tmp/e" || fail "a float for a uint"
# a run that writes past its buffer fails (exit 1) naming the address
"$kiln" wave run "$tmp/memory.o" --kernel grid2d --groups 1 --block 16,4 --arg buf:size:64 --arg u32:48 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "outside every mapped region" "$tmp/e" || fail "a write past the buffer"
# the budgets: big_scratch clears 8 MiB of scratch per group (8256 units of
# work as each starts); 20,000 units run two groups and stop the third
"$clang" -x assembler -target amdgcn-amd-amdhsa -mcpu=gfx900 -c "$dir/scratch.s" -o "$tmp/scratch.o" 2>"$tmp/e" \
  || { cat "$tmp/e"; fail "assembling scratch.s"; }
"$kiln" wave run "$tmp/scratch.o" --kernel big_scratch --groups 100000 --arg buf:size:256 --max-work 20000 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "group (2,0,0), as it starts: the run passed its work budget of 20000 units" "$tmp/e" \
  || { cat "$tmp/e"; fail "--max-work"; }
"$kiln" wave run "$tmp/scratch.o" --kernel big_scratch --groups 1000000 --arg buf:size:256 --max-seconds 0.01 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "the run passed its time budget of 0.01 s" "$tmp/e" || { cat "$tmp/e"; fail "--max-seconds"; }
"$kiln" wave run "$tmp/scratch.o" --kernel big_scratch --groups 1 --arg buf:size:256 --max-seconds 0 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "max-seconds '0' is not a time above 0" "$tmp/e" || fail "--max-seconds 0"
"$kiln" wave run "$tmp/scratch.o" --kernel big_scratch --groups 1 --arg buf:size:256 --max-work 0 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "max-work '0' is not a count above 0" "$tmp/e" || fail "--max-work 0"
"$kiln" wave --help | grep -q -- "--max-seconds S" || fail "--help without --max-seconds"
# diff: grid2d at the reference and at the Wavefront level agree (exit 0);
# one level against itself, or --level for --levels, is refused
"$kiln" wave diff "$tmp/memory.o" --kernel grid2d --levels reference,wavefront --groups 3,2 --block 16,4 \
  --arg buf:size:1536 --arg u32:48 >"$tmp/diff" 2>"$tmp/e" || { cat "$tmp/diff" "$tmp/e"; fail "wave diff"; }
grep -q "^the same: kernel grid2d at reference and at wavefront" "$tmp/diff" || { cat "$tmp/diff"; fail "diff: same"; }
"$kiln" wave diff "$tmp/memory.o" --kernel grid2d --levels lane,reference --groups 3,2 --block 16,4 \
  --arg buf:size:1536 --arg u32:48 >"$tmp/diff" 2>"$tmp/e" || { cat "$tmp/diff" "$tmp/e"; fail "wave diff lane"; }
grep -q "^the same: kernel grid2d at lane and at reference" "$tmp/diff" || { cat "$tmp/diff"; fail "diff lane: same"; }
"$kiln" wave diff "$tmp/memory.o" --kernel grid2d --levels wavefront,wavefront --groups 1 --arg buf:size:64 \
  --arg u32:4 >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "proves nothing" "$tmp/e" || { cat "$tmp/e"; fail "diff: a level against itself"; }
"$kiln" wave diff "$tmp/memory.o" --kernel grid2d --level wavefront --groups 1 --arg buf:size:64 --arg u32:4 \
  2>"$tmp/e"
[ $? -eq 2 ] && grep -q "diff takes --levels A,B" "$tmp/e" || { cat "$tmp/e"; fail "diff: --level"; }
echo "ok"
