#!/usr/bin/env bash
# Sets up aicc on a fresh Debian 12 machine: Debian packages (apt), a project venv with the Python
# tooling (pip), then configures and builds the default (RelWithDebInfo) tree in build/.
# Safe to re-run. Use `--no-build` to only install dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Build tools and the libraries aicc links: protobuf + ONNX's schema (libonnx-dev), fmt, CLI11,
# GoogleTest, Google Benchmark, LLVM 14 (FileCheck for the lit tests; codegen later); Python
# headers and pybind11 for the Python package (python/); the cross toolchains and qemu-user for
# the aarch64 / riscv64 targets (scripts/build-runtime.sh, tests/cross); the bare-metal Arm
# toolchain for the Cortex-M4 build of an embedded C bundle (CodegenC tests).
APT_PACKAGES=(
  build-essential cmake ninja-build git
  protobuf-compiler libprotobuf-dev libonnx-dev
  libfmt-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  llvm-14-dev llvm-14-tools
  libjpeg62-turbo-dev libpng-dev libwebp-dev libopenjp2-7-dev
  python3 python3-venv python3-pip
  python3-dev pybind11-dev
  chromium
  qemu-user g++-aarch64-linux-gnu g++-riscv64-linux-gnu
  gcc-arm-none-eabi libnewlib-arm-none-eabi
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python tooling in a project venv: lit (test runner), numpy + onnx (test helpers),
# onnxruntime (the peer the benchmarks compare against).
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  /usr/bin/python3 -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt

if [ "${1:-}" != "--no-build" ]; then
  cmake --preset default >/dev/null
  cmake --build --preset default
fi
