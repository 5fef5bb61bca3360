#!/usr/bin/env bash
# Trains the digits CNN with aicc and with PyTorch eager on the same data and initial weights.
#   examples/train_digits/run.sh [EPOCHS [LR]]   (from the repository root, after building aicc)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
epochs=${1:-30}
lr=${2:-3e-3}
work=${WORK:-/tmp/train_digits}
mkdir -p "$work"
py="$root/.venv/bin/python"
"$py" "$here/make_data.py" "$work"
"$py" "$here/make_model.py" "$work"
"$root/build/aicc" train "$work/digits_cnn.onnx" --loss loss \
  --data X="$work/train_x.npy" --data Y="$work/train_y.npy" \
  --test-data X="$work/test_x.npy" --test-data Y="$work/test_y.npy" --accuracy logits:Y \
  --optimizer adam --lr "$lr" --batch 32 --epochs "$epochs" --remat -o "$work/digits_cnn_trained.onnx"
"$py" "$here/eval_onnxruntime.py" "$work"
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  /usr/bin/python3 "$here/train_torch.py" "$work" "$epochs" "$lr"
else
  echo "PyTorch not found (apt-get install python3-torch): skipping the PyTorch comparison"
fi
