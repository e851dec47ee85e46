#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages kiln needs, only those missing, and the
# sanitizer and libFuzzer runtimes its test builds link, checked as the
# files themselves: a compiler can be installed without them. Runs apt-get
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
  clang libclang-rt-dev                     # libFuzzer targets (scripts/fuzz.sh); clang's
                                            # runtimes, which clang only recommends
  spin                                      # the transport's doorbell model (Promela)
  libelf-dev llvm lld                       # guest code objects; llvm-mc checks the decoder
  python3-cffi python3-numpy python3-pytest scdoc  # the Python package and its tests; the man page
)

# The runtimes the test builds link, for the gcc and clang on PATH: prints
# "FILE PACKAGE" for each one missing (PACKAGE provides it).
#   gcc, -DKILN_SANITIZE=address,undefined and =thread: libasan, libubsan, libtsan
#   clang, scripts/fuzz.sh (-fsanitize=fuzzer,address,undefined): libclang_rt.*
missing_runtimes() {
  local v f path dir arch
  if command -v gcc >/dev/null; then
    v=$(gcc -dumpversion)
    for f in libasan.so libubsan.so libtsan.so; do
      path=$(gcc -print-file-name="$f")   # the bare name when gcc has none
      [[ $path = /* && -e $path ]] || echo "$f libgcc-${v%%.*}-dev"
    done
  fi
  if command -v clang >/dev/null; then
    v=$(clang -dumpversion)
    dir=$(clang --print-runtime-dir)
    arch=$(clang -dumpmachine)
    arch=${arch%%-*}
    for f in fuzzer asan; do   # named either way, by the LLVM's runtime layout
      [ -e "$dir/libclang_rt.$f-$arch.a" ] || [ -e "$dir/libclang_rt.$f.a" ] ||
        echo "$dir/libclang_rt.$f-$arch.a libclang-rt-${v%%.*}-dev"
    done
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
while read -r _ p; do
  [[ " ${missing[*]} " = *" $p "* ]] || missing+=("$p")
done < <(missing_runtimes)

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages and the sanitizer and libFuzzer runtimes present"
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

# Compilers installed just now have their runtimes checked only now.
still=$(missing_runtimes)
if [ -n "$still" ]; then
  echo "setup: runtimes still missing after installing (file, package):" >&2
  echo "$still" >&2
  exit 1
fi
