#!/bin/sh
# SPDX-License-Identifier: MIT
# spin.sh MODEL WORKDIR MODE [SPIN_DEFINES...]: verifies a Spin model (the
# ring doorbell, doorbell.pml) in WORKDIR. MODE "holds": passes when Spin's
# full search finds no error (no assertion violated, no invalid end state).
# MODE "finds-lost-wakeup": passes only when Spin reports the lost wakeup
# (the model built with -DNOFENCE must be able to show it). MODE
# "finds-deadlock": passes only when Spin reports an invalid end state (the
# command stream's model, stream.pml, built with -DNODRAIN).
set -eu
model=$1 dir=$2 mode=$3
shift 3
command -v spin >/dev/null || { echo "spin is not installed (scripts/setup.sh installs it)"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
cp "$model" "$dir/model.pml"
cd "$dir"
model=model.pml   # the trail is written and read beside the model
spin "$@" -a "$model" >spin.log
${CC:-cc} -O2 -o pan pan.c
./pan -m100000 >pan.log 2>&1 || true
cat pan.log
errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log)
[ -n "$errors" ] || { echo "spin.sh: pan printed no error count"; exit 1; }
case $mode in
holds)
  if [ "$errors" -ne 0 ]; then
    spin "$@" -t -p "$model" | tail -40
    echo "spin.sh: the model has $errors error(s)"
    exit 1
  fi
  grep -q "invalid end states	+" pan.log || { echo "spin.sh: the search did not check end states"; exit 1; }
  echo "spin.sh: no lost wakeup, no deadlock, no assertion violated";;
finds-lost-wakeup)
  grep -q "assertion violated no_lost_wakeup" pan.log || { echo "spin.sh: Spin did not find the lost wakeup"; exit 1; }
  spin "$@" -t "$model" | grep -q "no_lost_wakeup" || { echo "spin.sh: the trail does not replay"; exit 1; }
  echo "spin.sh: found the lost wakeup, as it must without the fences";;
finds-deadlock)
  grep -q "invalid end state (at depth" pan.log || { echo "spin.sh: Spin found no deadlock"; exit 1; }
  echo "spin.sh: found the deadlock, as it must when the client takes no answers while it waits for room";;
*)
  echo "spin.sh: unknown mode $mode"; exit 1;;
esac
