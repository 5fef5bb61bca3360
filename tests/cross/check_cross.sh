#!/usr/bin/env bash
# Cross targets (docs/runtime.md): mnist-8 and the zoo's mobilenet_v2 and mobilenet_v3_small
# compiled with `aicc compile --target aarch64-linux-gnu` (NEON kernels) / `riscv64-linux-gnu`
# (portable kernels), run by the runtime
# cross-built with scripts/build-runtime.sh (aicc-run) under qemu-user, must match the host's
# compiled outputs within rtol 1e-4 / atol 1e-5. A target whose cross toolchain or qemu is missing
# is skipped with the reason printed (scripts/setup.sh installs them); exit 77 when all are.
#   check_cross.sh AICC PYTHON [ZOO_DIR]
set -uo pipefail
aicc="$1"; py="$2"; zoo="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
shared="$root/../shared"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
models=("mnist-8|$root/models/mnist-8/model.onnx|$root/models/mnist-8/test_data_set_0")
for m in mobilenet_v2 mobilenet_v3_small; do
  if [ -n "$zoo" ] && [ -f "$zoo/$m.onnx" ] && [ -d "$shared/zoo/$m/test_data_set_0" ]; then
    models+=("$m|$zoo/$m.onnx|$shared/zoo/$m/test_data_set_0")
  else
    echo "note: $m skipped: no materialized zoo model in '${zoo}' or no ../shared/zoo data"
  fi
done
fails=0; ran=0
# compare HOST_OUT CROSS_OUT: the folders' output_<i>.pb agree within rtol 1e-4 / atol 1e-5.
compare() {
  "$py" - "$1" "$2" <<'PY'
import os, sys
import numpy as np, onnx
from onnx import numpy_helper
host, cross = sys.argv[1:3]
names = sorted(f for f in os.listdir(host) if f.endswith(".pb"))
assert names and names == sorted(f for f in os.listdir(cross) if f.endswith(".pb")), "output files differ"
worst = 0.0
for f in names:
    a, b = (numpy_helper.to_array(onnx.load_tensor(os.path.join(d, f))) for d in (host, cross))
    assert a.dtype == b.dtype and a.shape == b.shape, f"{f}: {b.dtype}{b.shape} vs {a.dtype}{a.shape}"
    if a.dtype.kind == "f":
        excess = np.abs(b.astype(np.float64) - a) - (1e-5 + 1e-4 * np.abs(a.astype(np.float64)))
        worst = max(worst, float(np.max(np.abs(b.astype(np.float64) - a) / (1e-5 + 1e-4 * np.abs(a)))))
        assert (excess <= 0).all(), f"{f}: max |diff| {np.max(np.abs(b - a)):.3g} beyond rtol 1e-4"
    else:
        assert (a == b).all(), f"{f}: integer outputs differ"
print(f"{len(names)} outputs, worst {worst:.3f} of the tolerance")
PY
}
for m in "${models[@]}"; do # the host's outputs, once per model
  IFS='|' read -r name model data <<< "$m"
  "$aicc" compile "$model" -o "$tmp/host-$name" >/dev/null &&
    "$aicc" run "$tmp/host-$name" --inputs-dir "$data" --output-dir "$tmp/host-$name.out" >/dev/null ||
    { echo "FAIL $name: the host compile/run failed"; fails=$((fails + 1)); }
done
for triple in aarch64-linux-gnu riscv64-linux-gnu; do
  arch="${triple%%-*}"
  if ! command -v "$triple-g++" >/dev/null; then
    echo "SKIP $arch: $triple-g++ not found (Debian g++-$triple; scripts/setup.sh installs it)"; continue
  fi
  if ! command -v "qemu-$arch" >/dev/null; then
    echo "SKIP $arch: qemu-$arch not found (Debian qemu-user; scripts/setup.sh installs it)"; continue
  fi
  if ! "$root/scripts/build-runtime.sh" --target "$triple" > "$tmp/build-$arch.log" 2>&1; then
    echo "FAIL $arch: building the runtime failed:"; tail -20 "$tmp/build-$arch.log"
    fails=$((fails + 1)); continue
  fi
  ran=$((ran + 1))
  for m in "${models[@]}"; do
    IFS='|' read -r name model data <<< "$m"
    dir="$tmp/$arch-$name"
    if ! "$aicc" compile "$model" -o "$dir" --target "$triple" > "$tmp/log" 2>&1; then
      echo "FAIL $arch $name: aicc compile --target $triple: $(tail -3 "$tmp/log")"; fails=$((fails + 1)); continue
    fi
    # aarch64 code calls the NEON micro-kernels (their names are in model.so's strings).
    if [ "$arch" = aarch64 ] && ! grep -q "f32_gemm_neon_8x8" "$dir/model.so"; then
      echo "FAIL $arch $name: model.so does not call the NEON GEMM kernel"; fails=$((fails + 1)); continue
    fi
    start=$(date +%s%N)
    if ! "qemu-$arch" -L "/usr/$triple" "$root/build-rt-$arch/aicc-run" run "$dir" --inputs-dir "$data" \
         --output-dir "$dir.out" > "$tmp/log" 2>&1; then
      echo "FAIL $arch $name: aicc-run under qemu-$arch: $(tail -3 "$tmp/log")"; fails=$((fails + 1)); continue
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if compare "$tmp/host-$name.out" "$dir.out" > "$tmp/cmp" 2>&1
    then
      echo "ok   $arch $name: $(cat "$tmp/cmp") (qemu run $ms ms)"
    else
      echo "FAIL $arch $name: $(tail -2 "$tmp/cmp")"; fails=$((fails + 1))
    fi
  done
  # Self-contained (--static-runtime --embed-weights): mnist-8's model.so carries the cross-built
  # runtime, the plan and the weights; the cross aicc-run loads the folder from it.
  dir="$tmp/$arch-mnist-8-static"
  if ! "$aicc" compile "$root/models/mnist-8/model.onnx" -o "$dir" --target "$triple" --static-runtime \
       --embed-weights > "$tmp/log" 2>&1; then
    echo "FAIL $arch mnist-8 --static-runtime: $(tail -3 "$tmp/log")"; fails=$((fails + 1))
  elif ! "qemu-$arch" -L "/usr/$triple" "$root/build-rt-$arch/aicc-run" run "$dir" \
       --inputs-dir "$root/models/mnist-8/test_data_set_0" --output-dir "$dir.out" > "$tmp/log" 2>&1; then
    echo "FAIL $arch mnist-8 --static-runtime: aicc-run: $(tail -3 "$tmp/log")"; fails=$((fails + 1))
  elif compare "$tmp/host-mnist-8.out" "$dir.out" > "$tmp/cmp" 2>&1; then
    echo "ok   $arch mnist-8 --static-runtime --embed-weights: $(cat "$tmp/cmp") (model.so $(stat -c %s "$dir/model.so") bytes)"
  else
    echo "FAIL $arch mnist-8 --static-runtime: $(tail -2 "$tmp/cmp")"; fails=$((fails + 1))
  fi
done
echo "$fails failed"
[ "$fails" = 0 ] || exit 1
[ "$ran" -gt 0 ] || { echo "SKIP: no cross target could run"; exit 77; }
