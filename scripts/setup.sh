#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages kiln needs, only those missing. Runs apt-get
# as root (directly, or through sudo when not root).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config          # compilers and the build
  libvulkan-dev mesa-vulkan-drivers         # Vulkan loader; lavapipe, the CPU device
  vulkan-validationlayers vulkan-tools      # validation in tests; vulkaninfo
  libshaderc-dev glslang-dev spirv-tools    # GLSL -> SPIR-V (static glslang, SPIRV-Tools)
  glslang-tools                             # glslangValidator, for tests
  libspirv-cross-c-shared-dev               # reflection
  libxxhash-dev                             # hashing
  libpng-dev                                # the demo's PNG
  clang                                     # libFuzzer targets (scripts/fuzz.sh)
  spin                                      # the transport's doorbell model (Promela)
  libelf-dev llvm lld                       # guest code objects; llvm-mc checks the decoder
  python3-cffi python3-numpy python3-pytest scdoc  # the Python package and its tests; the man page
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    SUDO="sudo"
  else
    echo "setup: missing packages (${missing[*]}) and not root; run as root or install them" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
