#!/usr/bin/env bash
# Builds and runs every test: unit tests (GoogleTest), lit/FileCheck IR tests, the bad-input
# tests, the real models of ../shared/models and the ONNX backend suite (when ../shared is
# present; skips say why).
#   scripts/test.sh          default build (build/)
#   scripts/test.sh --asan   AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/)
#   scripts/test.sh --tsan   ThreadSanitizer build (build-tsan/) of the unit tests; runs the
#                            concurrency stress tests (Concurrency.*) only. Not in CI (a third
#                            full build would not fit its time); run it after touching the runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
if [ "${1:-}" = "--asan" ]; then preset=asan; fi
if [ "${1:-}" = "--tsan" ]; then
  [ -x .venv/bin/lit ] || scripts/setup.sh --no-build
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  exec build-tsan/tests/aicc_unit_tests --gtest_filter='Concurrency.*'
fi
[ -x .venv/bin/lit ] || scripts/setup.sh --no-build
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
builddir=build
[ "$preset" = asan ] && builddir=build-asan
# All ten zoo models (ONNX skeletons + deterministic weights, ~600 MB) for the engine checks: the
# JIT and the AOT artifact on each, against the interpreter (tests/models/check_engines.sh); the C
# bundle test takes the five small ones.
zoo=../shared/zoo
if [ -f "$zoo/materialize.py" ]; then
  .venv/bin/python "$zoo/materialize.py" build/zoo >/dev/null
else
  echo "note: $zoo not found; zoo-model checks skip"
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$builddir" --output-on-failure -j2
