#!/usr/bin/env bash
# Self-contained artifacts (`aicc compile --static-runtime [--embed-weights]`, docs/runtime.md):
# model.so needs only libc/libm and exports only the C API and the model descriptor; model.a keeps
# only those global; an application linked with either (tests/runtime/linked_app.c,
# aicc_model_load_linked) and aicc-run / `aicc run` on the folder all give the outputs of the
# ordinary artifact, bit for bit at one thread: mnist-8 with and without embedded weights, and the
# zoo's mobilenet_v2 when materialized. Bad use gets one clear error.
#   check_static.sh AICC AICC_RUN LIBAICC_RT PYTHON [ZOO_DIR]
set -uo pipefail
aicc="$(realpath "$1")"; runner="$(realpath "$2")"; lib="$(realpath "$3")"; py="$4"; zoo="${5:-}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export AICC_NUM_THREADS=1
fails=0
check() { # check NAME CONDITION-RESULT MESSAGE
  if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi
}
# raw NAME.pb... -> NAME.bin (the tensor's bytes); same A.pb B.bin -> 0 when identical
raw() { "$py" - "$@" <<'PY'
import sys, onnx
from onnx import numpy_helper
for p in sys.argv[1:]:
    numpy_helper.to_array(onnx.load_tensor(p)).tofile(p[:-3] + ".bin")
PY
}
same() { "$py" - "$1" "$2" <<'PY'
import sys, onnx
from onnx import numpy_helper
a = numpy_helper.to_array(onnx.load_tensor(sys.argv[1])).tobytes()
sys.exit(0 if a == open(sys.argv[2], "rb").read() else 1)
PY
}

# run_case NAME MODEL DATA EMBED(0|1): the static folder against the ordinary artifact.
run_case() {
  local name="$1" model="$2" data="$3" embed="$4" d="$tmp/$1"
  "$aicc" compile "$model" -o "$d.ref" >/dev/null &&
    "$aicc" run "$d.ref" --inputs-dir "$data" --output-dir "$d.ref.out" >/dev/null ||
    { check "$name: the ordinary artifact" 1 "compile or run failed"; return; }
  local flags=(--static-runtime); [ "$embed" = 1 ] && flags+=(--embed-weights)
  if ! "$aicc" compile "$model" -o "$d" "${flags[@]}" > "$tmp/log" 2>&1; then
    check "$name: aicc compile ${flags[*]}" 1 "$(tail -5 "$tmp/log")"; return
  fi
  local want="model.a model.so aicc_runtime.h report.json report.txt"
  [ "$embed" = 1 ] || want="$want model.weights"
  local files; files=$(cd "$d" && ls | sort | tr '\n' ' ')
  check "$name: the folder holds $files" "$([ "$files" = "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" ]; echo $?)" "expected $want"
  local needed extra
  needed=$(readelf -d "$d/model.so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
  extra=$(for n in $needed; do case "$n" in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|ld-linux*) ;; *) echo "$n";; esac; done)
  check "$name: model.so needs only libc/libm ($needed)" "$([ -z "$extra" ]; echo $?)" "also needs: $extra"
  local api exported global
  api=$( (grep -o '\baicc_[a-z_]*(' "$root/include/aicc/runtime.h" | tr -d '('; echo aicc_linked_model) | sort -u)
  exported=$(nm -D --defined-only "$d/model.so" | awk '{print $3}' | sort -u)
  check "$name: model.so exports the C API and aicc_linked_model only" "$([ "$api" = "$exported" ]; echo $?)" \
    "differs: $(comm -3 <(echo "$api") <(echo "$exported") | tr '\n' ' ')"
  # (GNU unique symbols, 'u': C++ inline variables and the statics of inline functions, merge by
  # design and stay.)
  global=$(nm -g --defined-only "$d/model.a" | awk 'NF == 3 && $2 != "u" {print $3}' | sort -u)
  check "$name: model.a keeps only those global" "$([ "$api" = "$global" ]; echo $?)" \
    "differs: $(comm -3 <(echo "$api") <(echo "$global") | head -5 | tr '\n' ' ')"
  strip -o "$tmp/stripped.so" "$d/model.so"
  echo "     $name: model.so $(stat -c %s "$d/model.so") bytes ($(stat -c %s "$tmp/stripped.so") stripped), model.a $(stat -c %s "$d/model.a") bytes"
  # The inputs as raw bytes, in order.
  local ins=() i=0
  while [ -f "$data/input_$i.pb" ]; do cp "$data/input_$i.pb" "$d.in$i.pb"; raw "$d.in$i.pb"; ins+=("$d.in$i.bin"); i=$((i + 1)); done
  local w="-"; [ "$embed" = 1 ] || w="$d/model.weights"
  cmp -s "$d/aicc_runtime.h" "$root/include/aicc/runtime.h"
  check "$name: aicc_runtime.h is the C API's header" $? "differs from include/aicc/runtime.h"
  cc -std=c99 -Wall -Wextra -Werror -I "$d" -c "$here/linked_app.c" -o "$tmp/app.o" &&
  c++ "$tmp/app.o" "$d/model.so" -Wl,-rpath,"$d" -o "$d.app_so" && c++ "$tmp/app.o" "$d/model.a" -o "$d.app_a" ||
    { check "$name: linking the application" 1 "failed"; return; }
  for form in so a; do
    if ! (cd "$tmp" && "$d.app_$form" "$w" "${ins[@]}" > "$tmp/log" 2>&1); then
      check "$name: application with model.$form" 1 "$(cat "$tmp/log")"; continue
    fi
    local k=0 ok=0
    while [ -f "$d.ref.out/output_$k.pb" ]; do same "$d.ref.out/output_$k.pb" "$tmp/out$k.bin" || ok=1; k=$((k + 1)); done
    check "$name: application with model.$form = the ordinary artifact ($k outputs, bitwise)" "$ok" "outputs differ"
  done
  "$runner" run "$d" --inputs-dir "$data" --output-dir "$d.run" > "$tmp/log" 2>&1 &&
    "$aicc" run "$d" --inputs-dir "$data" --output-dir "$d.aicc" >> "$tmp/log" 2>&1 ||
    { check "$name: aicc-run and aicc run on the folder" 1 "$(tail -3 "$tmp/log")"; return; }
  local k=0 ok=0
  while [ -f "$d.ref.out/output_$k.pb" ]; do
    raw "$d.run/output_$k.pb" "$d.aicc/output_$k.pb"
    same "$d.ref.out/output_$k.pb" "$d.run/output_$k.bin" && same "$d.ref.out/output_$k.pb" "$d.aicc/output_$k.bin" || ok=1
    k=$((k + 1))
  done
  check "$name: aicc-run and aicc run on the folder = the ordinary artifact (bitwise)" "$ok" "outputs differ"
}

mnist="$root/models/mnist-8/model.onnx"; mdata="$root/models/mnist-8/test_data_set_0"
run_case mnist8-embedded "$mnist" "$mdata" 1
run_case mnist8 "$mnist" "$mdata" 0
if [ -n "$zoo" ] && [ -f "$zoo/mobilenet_v2.onnx" ] && [ -d "$root/../shared/zoo/mobilenet_v2/test_data_set_0" ]; then
  run_case mobilenet_v2-embedded "$zoo/mobilenet_v2.onnx" "$root/../shared/zoo/mobilenet_v2/test_data_set_0" 1
else
  echo "note: mobilenet_v2 skipped: no materialized zoo model in '${zoo}' or no ../shared/zoo data"
fi

# Bad use: one clear error.
expect_error() { # NAME EXPECTED-SUBSTRING COMMAND...
  local name="$1" want="$2"; shift 2
  (cd "$tmp" && "$@") > "$tmp/out" 2> "$tmp/err"; local rc=$?
  check "$name" "$([ $rc != 0 ] && grep -qF -- "$want" "$tmp/err"; echo $?)" \
    "status $rc, stderr: $(cat "$tmp/err")"
}
expect_error "weights not linked in, none given" "pass its model.weights" "$tmp/mnist8.app_so" - "$tmp/mnist8.in0.bin"
expect_error "wrong weights file" "holds" "$tmp/mnist8.app_so" "$tmp/mnist8.in0.bin" "$tmp/mnist8.in0.bin"
c++ "$tmp/app.o" "$lib" -Wl,-rpath,"$(dirname "$lib")" -o "$tmp/app_rt"
expect_error "libaicc_rt has no linked model" "no model is linked into this program" "$tmp/app_rt" - "$tmp/mnist8.in0.bin"
expect_error "--embed-weights without --static-runtime" "--embed-weights needs --emit c or --static-runtime" \
  "$aicc" compile "$mnist" -o "$tmp/x" --embed-weights
expect_error "--static-runtime with --emit c" "--static-runtime is for --emit so" \
  "$aicc" compile "$mnist" -o "$tmp/x" --emit c --static-runtime
AICC_RUNTIME_LIB="$tmp/nope.a" expect_error "runtime archive missing" "AICC_RUNTIME_LIB='$tmp/nope.a' is not a file" \
  "$aicc" compile "$mnist" -o "$tmp/x" --static-runtime

[ "$fails" = 0 ] && echo "all checks passed" || { echo "$fails check(s) failed"; exit 1; }
