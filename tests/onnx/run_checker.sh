#!/usr/bin/env bash
# The independent suite check: `aicc test-onnx` and check_with_run.py (which drives `aicc run
# --inputs-dir/--output-dir` and compares with numpy/onnx) must agree on every test.
# Exit 77 (skip) when the suite is absent.   run_checker.sh AICC_BINARY PYTHON [REPORT]
# REPORT: a `test-onnx --json` report of this binary to agree with (ctest passes the one
# onnx_backend_suite just wrote, saving a second interpreter run); made here when absent.
set -uo pipefail
aicc="$1"; py="$2"; given="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
data="${AICC_ONNX_SUITE:-$here/../../../shared/onnx-backend/onnx/backend/test/data}"
if [ ! -d "$data/node" ]; then
  echo "SKIP: ONNX backend suite not found at $data (it lives in ../shared next to the repo)"
  exit 77
fi
cats=()
for c in node simple pytorch-converted pytorch-operator light; do [ -d "$data/$c" ] && cats+=("$data/$c"); done
if [ -n "$given" ] && [ -s "$given" ] && [ "$given" -nt "$aicc" ]; then
  report="$given"
  echo "agreeing with $report"
else
  report="$(mktemp)"
  trap 'rm -f "$report"' EXIT
  "$aicc" test-onnx -j2 --tolerances "$here/tolerances.txt" --json "$report" "${cats[@]}" | tail -1
fi
exec "$py" "$here/check_with_run.py" "$aicc" "${cats[@]}" --tolerances "$here/tolerances.txt" --agree-with "$report" --jobs 2
