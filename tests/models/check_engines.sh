#!/usr/bin/env bash
# The compiled engines against the reference interpreter (-O0) on real models, through the CLI:
#   - `aicc run -O2 --engine jit` on every shared model and the materialized zoo models;
#   - `aicc compile` (AOT .so) + `aicc run FOLDER` on every model that compiles completely
#     (the shared models listed below; silero-vad (If) is refused by name, see artifact_test.cpp);
# each within rtol 1e-4 / atol 1e-5 (tests/models/compare_opt_levels.py).
#   check_engines.sh AICC PYTHON [ZOO_DIR]     exit 77 (skip) when ../shared/models is absent
set -uo pipefail
aicc="$1"; py="$2"; zoo="${3:-}"
here="$(cd "$(dirname "$0")" && pwd)"
shared="$here/../../../shared"
if [ ! -d "$shared/models" ]; then
  echo "SKIP: $shared/models not found"; exit 77
fi
zooargs=()
if [ -n "$zoo" ] && ls "$zoo"/*.onnx >/dev/null 2>&1; then
  zooargs=(--zoo "$zoo" --zoo-data "$shared/zoo")
else
  echo "note: no materialized zoo models in '${zoo}' (scripts/test.sh writes build/zoo); shared models only"
fi
rc=0
"$py" "$here/compare_opt_levels.py" "$aicc" "$shared/models" -O2 --engine jit "${zooargs[@]}" || rc=1
aot="gtcrn-simple,mnist-8,mobilenetv2-12-int8,oww-melspectrogram,ppocrv4-det,ppocrv4-rec,ultraface-rfb-320"
if [ -n "$zoo" ]; then
  for f in "$zoo"/*.onnx; do [ -e "$f" ] && aot="$aot,$(basename "$f" .onnx)"; done
fi
"$py" "$here/compare_opt_levels.py" "$aicc" "$shared/models" -O2 --engine artifact --only "$aot" \
  "${zooargs[@]}" || rc=1
exit $rc
