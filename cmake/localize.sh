#!/bin/sh
# SPDX-License-Identifier: MIT
# localize.sh OBJECT [PREFIX]: makes local, in a relocatable object, every
# global symbol it defines except the public calls, those named PREFIX*
# (default kiln_; libkiln-wave's are kiln_wave_). Weak symbols are left
# as they are: they are C++ COMDAT members (DW.ref.__gxx_personality_v0 and
# the like, hidden), which a final link may take from this object for
# every other object that shares their group, so they must stay global.
set -eu
obj=$1
prefix=${2:-kiln_}
list=$obj.localize
readelf -W -s "$obj" | awk -v p="^$prefix" '$5 == "GLOBAL" && $7 != "UND" && $8 !~ p { print $8 }' | sort -u >"$list"
objcopy --localize-symbols="$list" "$obj"
