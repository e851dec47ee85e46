#!/bin/sh
# SPDX-License-Identifier: MIT
# make_data.sh CLANG LLD LLVM_MC KERNELS OUT: compiles every kernel of
# KERNELS into OUT (the build tree's tests/data/wave/) as the wave tests
# would at run time: NAME.cl to NAME.o (clang, gfx900) and NAME.so
# (ld.lld -shared), NAME.s to NAME.o (llvm-mc). A machine without those
# tools (the H200 machine has none) runs the tests on these objects
# (KILN_TEST_DATA, tests/wave/kernels/kernels.h). Where clang lacks the
# AMDGPU target nothing is made and the tests skip there as here.
set -u
clang=$1 lld=$2 mc=$3 src=$4 out=$5
mkdir -p "$out"
probe="$out/.probe.cl"
echo '__kernel void probe(__global int *p) { *p = 1; }' >"$probe"
if ! "$clang" -x cl -target amdgcn-amd-amdhsa -mcpu=gfx900 -nogpulib -O2 -c "$probe" -o "$out/.probe.o" 2>/dev/null; then
    rm -f "$probe" "$out/.probe.o"
    echo "make_data: $clang cannot compile for amdgcn: no wave test data made"
    touch "$out/.stamp"
    exit 0
fi
rm -f "$probe" "$out/.probe.o"
status=0
for cl in "$src"/*.cl; do
    n=$(basename "$cl" .cl)
    "$clang" -x cl -target amdgcn-amd-amdhsa -mcpu=gfx900 -nogpulib -O2 -I"$src" -c "$cl" -o "$out/$n.o" || status=1
    # a kernel that cannot be linked (external.cl calls a function it
    # lacks, for the loader's refusal) has no .so: the tests link only others
    "$lld" -shared "$out/$n.o" -o "$out/$n.so" 2>/dev/null || rm -f "$out/$n.so"
done
for s in "$src"/*.s; do
    n=$(basename "$s" .s)
    "$mc" -triple amdgcn-amd-amdhsa -mcpu=gfx900 -filetype=obj "$s" -o "$out/$n.o" || status=1
done
[ $status -eq 0 ] && touch "$out/.stamp"
exit $status
