#!/usr/bin/env bash
# Builds the runtime alone (libaicc_rt.so, libaicc_rt.a, aicc-run; docs/runtime.md), natively or
# cross-compiled with Debian's cross toolchains, into build-rt-<arch>/:
#   scripts/build-runtime.sh                               this machine (build-rt-native/)
#   scripts/build-runtime.sh --target aarch64-linux-gnu    needs g++-aarch64-linux-gnu
#   scripts/build-runtime.sh --target riscv64-linux-gnu    needs g++-riscv64-linux-gnu
# Run the cross-built aicc-run with qemu-user: qemu-aarch64 -L /usr/aarch64-linux-gnu
# build-rt-aarch64/aicc-run run DIR ... (DIR compiled with `aicc compile --target ...`).
set -euo pipefail
cd "$(dirname "$0")/.."
triple=""
if [ "${1:-}" = "--target" ]; then triple="${2:?--target needs a triple}"; fi
# -O2 as the main build (GCC 12 warns falsely about std::string copies at -O3).
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" -DAICC_RUNTIME_ONLY=ON)
if [ -z "$triple" ]; then
  dir=build-rt-native
else
  arch="${triple%%-*}"
  case "$arch" in aarch64|riscv64) ;; *) echo "unknown target '$triple' (aarch64-linux-gnu or riscv64-linux-gnu)" >&2; exit 2;; esac
  if ! command -v "$triple-g++" >/dev/null; then
    echo "$triple-g++ not found: install Debian's g++-$triple (scripts/setup.sh does)" >&2; exit 2
  fi
  dir="build-rt-$arch"
  args+=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR="$arch"
         -DCMAKE_C_COMPILER="$triple-gcc" -DCMAKE_CXX_COMPILER="$triple-g++")
fi
cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" --target aicc_rt aicc_rt_static aicc-run
echo "built $dir: $(ls "$dir"/libaicc_rt.so "$dir"/aicc-run | tr '\n' ' ')"
