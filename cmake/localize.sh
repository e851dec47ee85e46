#!/bin/sh
# SPDX-License-Identifier: MIT
# localize.sh OBJECT: makes local, in a relocatable object, every global
# symbol it defines except the public kiln_* calls. Weak symbols are left
# as they are: they are C++ COMDAT members (DW.ref.__gxx_personality_v0 and
# the like, hidden), which a final link may take from this object for
# every other object that shares their group, so they must stay global.
set -eu
obj=$1
list=$obj.localize
readelf -W -s "$obj" | awk '$5 == "GLOBAL" && $7 != "UND" && $8 !~ /^kiln_/ { print $8 }' | sort -u >"$list"
objcopy --localize-symbols="$list" "$obj"
