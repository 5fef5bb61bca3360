#!/usr/bin/env bash
# The compiled engines against the reference interpreter (-O0) on real models, through the CLI:
#   - `aicc run -O2 --engine jit` on every shared model and the materialized zoo models (all ten,
#     as scripts/test.sh writes them);
#   - `aicc compile` (AOT .so) + `aicc run FOLDER` on every one of them: the shared models listed
#     below (superres-prepost-customops needs onnxruntime-extensions' custom ops) and the zoo;
# each within rtol 1e-4 / atol 1e-5 (tests/models/compare_opt_levels.py), the artifacts also
# bit-identical across runs and thread counts;
#   - aicc-run (the runtime alone, no compiler) on every compiled folder: its outputs equal
#     `aicc run FOLDER`'s bit for bit at one thread.
#   check_engines.sh AICC PYTHON [ZOO_DIR] [AICC_RUN]   exit 77 (skip) when ../shared/models is absent
set -uo pipefail
aicc="$1"; py="$2"; zoo="${3:-}"; runner="${4:-}"
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
# Every listed model must be found and match (compare_opt_levels.py fails on a missing one).
models="gtcrn-simple,mnist-8,mobilenetv2-12-int8,oww-melspectrogram,ppocrv4-det,ppocrv4-rec"
models="$models,silero-vad-op18-ifless,silero-vad-v5,ultraface-rfb-320"
if [ ${#zooargs[@]} -gt 0 ]; then
  models="$models,bert_like_encoder,densenet121,efficientnet_b0,mlp,mobilenet_v2,mobilenet_v3_small"
  models="$models,resnet18,resnet50,shufflenet_v2_x1_0,squeezenet1_1"
fi
rtargs=()
if [ -n "$runner" ]; then rtargs=(--rt-runner "$runner"); fi
rc=0
# The -O0 reference runs once per model for both engines; the artifacts also run with 1, 2 and 3
# threads and must give bit-identical outputs (determinism).
"$py" "$here/compare_opt_levels.py" "$aicc" "$shared/models" -O2 --engine jit,artifact \
  --only "$models" --determinism 1,2,3 "${zooargs[@]}" "${rtargs[@]}" || rc=1
exit $rc
