"""Test accuracy of the model aicc trained (digits_cnn_trained.onnx), computed by ONNX Runtime:
an independent check that the exported weights are the trained ones."""
import sys

import numpy as np
import onnxruntime as ort

d = sys.argv[1] if len(sys.argv) > 1 else "."
x, y = np.load(f"{d}/test_x.npy"), np.load(f"{d}/test_y.npy")
sess = ort.InferenceSession(f"{d}/digits_cnn_trained.onnx", providers=["CPUExecutionProvider"])
correct = 0
for b in range(0, len(x), 32):  # aicc fixed the batch dim to 32: pad the last chunk
    xb, yb = x[b:b + 32], y[b:b + 32]
    n = len(xb)
    pad = lambda a: np.concatenate([a, np.repeat(a[:1], 32 - n, axis=0)]) if n < 32 else a
    loss, logits = sess.run(None, {"X": pad(xb), "Y": pad(yb)})
    correct += int((logits[:n].argmax(1) == yb).sum())
print(f"onnxruntime on the aicc-trained model: test accuracy {100 * correct / len(x):.2f}%")
