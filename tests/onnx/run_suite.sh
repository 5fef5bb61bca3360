#!/usr/bin/env bash
# Runs the ONNX v1.22 backend test suite (../shared/onnx-backend) with the reference interpreter (or
# the engine given by --engine) and
# checks the result against tests/onnx/expected_failures.txt: a test outside the list that does
# not pass, or a listed test that passes, fails this check (the same list for every engine: the
# JIT and ahead-of-time artifacts pass what the interpreter passes). Exit 77 (skip) when the suite
# is absent.
#   run_suite.sh AICC_BINARY [extra test-onnx flags]
set -uo pipefail
aicc="$1"; shift
here="$(cd "$(dirname "$0")" && pwd)"
data="${AICC_ONNX_SUITE:-$here/../../../shared/onnx-backend/onnx/backend/test/data}"
if [ ! -d "$data/node" ]; then
  echo "SKIP: ONNX backend suite not found at $data (it lives in ../shared next to the repo)"
  exit 77
fi
cats=()
for c in node simple pytorch-converted pytorch-operator light; do
  [ -d "$data/$c" ] && cats+=("$data/$c")
done
exec "$aicc" test-onnx -j2 --timeout 300 --expect-failures "$here/expected_failures.txt" --tolerances "$here/tolerances.txt" "$@" "${cats[@]}"
