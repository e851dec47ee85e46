#!/bin/sh
# SPDX-License-Identifier: MIT
# exports.sh LIBRARY HEADER [PREFIX [MACRO [FORBIDDEN [REQUIRED]]]]: fails, listing
# them, if the library defines a symbol another object could link to other
# than PREFIX* (default kiln_; libkiln-wave's are kiln_wave_): a GLOBAL or
# UNIQUE one, or a WEAK one of default visibility. (Hidden weak symbols are C++ COMDAT
# members such as DW.ref.__gxx_personality_v0: no link can reach them by
# name from outside, and identical copies merge. So are the C++ ABI's own
# weak names a compiler may emit, typeinfo (_ZTI, _ZTS: clang's function
# sanitizer) and standard-library template instances (_ZNSt, _ZNKSt, _ZSt):
# every object defines them alike, and none is a name of kiln's.) Also fails
# unless every call HEADER marks KILN_API is exported, and if the library
# holds a test hook at all, even as a local symbol: hooks are compiled only
# into the test build (KILN_TEST_HOOKS). The calls HEADER declares are
# the lines starting with MACRO (default KILN_API). FORBIDDEN, a regular
# expression, names symbols the library must not hold at all, not even
# local ones, nor need from elsewhere: libkiln holds no wave code (wave_*)
# and needs no libelf (elf_*, gelf_*). REQUIRED, a regular expression,
# names symbols the library must hold (as local ones: kiln's own code it
# ships and calls, such as the command stream's ring and heartbeat), each
# alternative at least once.
set -eu
lib=$1
prefix=${3:-kiln_}
macro=${4:-KILN_API}
forbidden=${5:-}
required=${6:-}
want=$(grep -c "^$macro " "$2")
# A shared library exports what its dynamic symbol table holds; a static
# one, what its objects' symbol tables hold.
syms=-s
case "$lib" in *.so|*.so.*) syms=--dyn-syms ;; esac
bad=$(readelf -W $syms "$lib" | awk '$7 != "UND" && $7 != "Ndx" && ($5 == "GLOBAL" || $5 == "UNIQUE" || ($5 == "WEAK" && $6 == "DEFAULT" && $8 !~ /^_Z(TI|TS|NSt|NKSt|St)/)) && $8 !~ p { print $5, $6, $8 }' p="^$prefix" | sort -u)
total=$(readelf -W $syms "$lib" | awk '$7 != "UND" && $7 != "Ndx" && ($5 == "GLOBAL") && $8 ~ p' p="^$prefix" | wc -l)
if [ -n "$bad" ]; then
  echo "$lib exports symbols outside $prefix*:"
  echo "$bad"
  echo "0 passed, 1 failed"
  exit 1
fi
hooks=$(readelf -W -s "$lib" | awk '$7 != "UND" && $8 ~ /^(mem_fault_arm|mem_fault_hits|pool_test_set_gen|arc_fault_set|arc_fault_steps|vkb_fault|mockb_hold|mockb_lose|mockb_hang|mockb_set_cost|mockb_counts|mockb_release|mockb_last_dispatch|mockb_keep_compiled_code|api_context_peek|ctx_device|csvc_hold|csvc_with_lock|csvc_job_state|csvc_back_of)$/ { print $8 }' | sort -u)
if [ -n "$hooks" ]; then
  echo "$lib holds test hooks (they belong to the test build only):"
  echo "$hooks"
  echo "0 passed, 1 failed"
  exit 1
fi
if [ -n "$forbidden" ]; then
  held=$(readelf -W -s "$lib" | awk '$8 ~ f { print $7 == "UND" ? "needs " $8 : "holds " $8 }' f="$forbidden" | sort -u | head -20)
  if [ -n "$held" ]; then
    echo "$lib holds or needs symbols it must not ($forbidden):"
    echo "$held"
    echo "0 passed, 1 failed"
    exit 1
  fi
fi
if [ -n "$required" ]; then
  for name in $(echo "$required" | sed 's/^\^(//; s/)\$$//; s/|/ /g'); do
    if ! readelf -W -s "$lib" | awk '$7 != "UND" { print $8 }' | grep -qx "$name"; then
      echo "$lib does not hold $name (it ships the code that defines it)"
      echo "0 passed, 1 failed"
      exit 1
    fi
  done
fi
if [ "$total" -ne "$want" ]; then
  echo "$lib exports $total $prefix* calls; $2 declares $want"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$lib: $total $prefix* calls exported, nothing else"
echo "1 passed, 0 failed"
