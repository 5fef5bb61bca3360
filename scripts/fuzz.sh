#!/usr/bin/env bash
# Runs one libFuzzer target (docs/fuzzing.md).
#   scripts/fuzz.sh --list              the target names, one per line
#   scripts/fuzz.sh TARGET [SECONDS [LIBFUZZER ARGS...]]   fuzz TARGET for SECONDS (default 60)
#   scripts/fuzz.sh --build [TARGET]    only configure and build (all targets by default)
# Builds build-fuzz/ with clang (-fsanitize=fuzzer,address,undefined; AICC_FUZZ=ON; FUZZ_NO_BUILD=1
# runs build-fuzz/fuzz/fuzz_TARGET as it is), then fuzzes a work corpus out/fuzz/TARGET/ (kept
# between runs) seeded from tests/fuzz/TARGET/ and, when present, from ../shared (ONNX backend node tests, models' test data). Crashes land in
# out/fuzz/TARGET/crashes/; a fixed one goes to tests/fuzz/TARGET/ as a regression input. Extra
# arguments after SECONDS go to libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
targets() { for f in fuzz/*.cpp; do b=$(basename "$f" .cpp); [ "$b" = standalone_main ] || echo "$b"; done; }
if [ "${1:-}" = "--list" ]; then targets; exit 0; fi
[ $# -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }

build() {
  local cxx=${FUZZ_CXX:-clang++-14} cc=${FUZZ_CC:-clang-14}
  if [ ! -f build-fuzz/build.ninja ]; then
    cmake -S . -B build-fuzz -G Ninja -DAICC_FUZZ=ON -DAICC_WERROR=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" >/dev/null
  fi
  nice -n 10 ninja -C build-fuzz "$@"
}

if [ "$1" = "--build" ]; then
  shift
  if [ $# -ge 1 ]; then build "fuzz_$1"; else build $(targets | sed 's/^/fuzz_/'); fi
  exit 0
fi

target=$1 seconds=${2:-60}
shift $(($# >= 2 ? 2 : 1))
targets | grep -x "$target" >/dev/null || { echo "unknown target '$target' (scripts/fuzz.sh --list)" >&2; exit 2; }
[ -n "${FUZZ_NO_BUILD:-}" ] || build "fuzz_$target" # FUZZ_NO_BUILD=1: run the binary as built

work=out/fuzz/$target
mkdir -p "$work/corpus" "$work/crashes"
seeds=("tests/fuzz/$target")
shared=../shared
# Run-time seeds from ../shared (not checked in): small files only.
if [ -d "$shared" ] && [ -z "$(ls -A "$work/corpus")" ]; then
  case $target in
  onnx_import | opt_O3)
    find "$shared/onnx-backend" -name model.onnx -size -8k 2>/dev/null | head -400 |
      while read -r f; do cp "$f" "$work/corpus/$(echo "$f" | md5sum | cut -c1-16).onnx"; done || true ;;
  tensor_pb)
    find "$shared/onnx-backend" -name '*.pb' -size -8k 2>/dev/null | head -400 |
      while read -r f; do cp "$f" "$work/corpus/$(echo "$f" | md5sum | cut -c1-16).pb"; done || true ;;
  esac
fi
dict=()
[ -f "fuzz/$target.dict" ] && dict=("-dict=fuzz/$target.dict")
[ ${#dict[@]} -eq 0 ] && [ -f fuzz/onnx.dict ] && case $target in onnx_import | opt_O3 | tensor_pb) dict=(-dict=fuzz/onnx.dict) ;; esac
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$work"
exec nice -n 10 "$root/build-fuzz/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=4096 -max_len=65536 -artifact_prefix=crashes/ -print_final_stats=1 \
  "${dict[@]/#-dict=/-dict=$root/}" "$@" corpus "${seeds[@]/#/$root/}"
