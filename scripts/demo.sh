#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up (Debian packages, build) and runs kiln's main job, `kiln demo`.
# Extra arguments go to kiln demo, e.g. scripts/demo.sh --frames 60.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2
./build/kiln demo "$@"
