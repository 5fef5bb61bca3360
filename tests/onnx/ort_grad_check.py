#!/usr/bin/env python3
"""Cross-checks `aicc autodiff` with ONNX Runtime.

For three models (an MLP like the zoo mlp, a LeNet-style CNN, one transformer encoder layer), each
an ONNX file with a scalar `loss` output, this script
  1. runs `aicc autodiff MODEL.onnx --loss loss --wrt x <weights...> -o GRAD.onnx`,
  2. runs GRAD.onnx with aicc (`aicc run --output-dir`) and with ONNX Runtime,
  3. compares every output (the loss and each grad_<name>) with rtol 1e-5.
GRAD.onnx is standard ONNX, so agreement means aicc's gradient graph means the same thing to an
independent engine. Models are float64 where ONNX Runtime's CPU kernels allow it (the CNN is
float32: ORT has no float64 Conv; the encoder's Gelu is written as Tanh-form elementwise ops:
ORT has no float64 Gelu or Erf).

Usage: tests/onnx/ort_grad_check.py [path/to/aicc]   (run with .venv/bin/python)
Exit status 0 when every model agrees.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AICC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "aicc")
RTOL = 1e-5


class Builder:
    def __init__(self, dtype):
        self.dtype = dtype
        self.nodes, self.inits, self.weights = [], [], []
        self.rng = np.random.default_rng(0)
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def weight(self, name, shape, scale=0.5):
        self.inits.append(numpy_helper.from_array(self.rng.uniform(-scale, scale, shape).astype(self.dtype), name))
        self.weights.append(name)
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, out=None, **attrs):
        out = out or self.name(op_type)
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def model(self, x_shape, opset):
        elem = TensorProto.DOUBLE if self.dtype == np.float64 else TensorProto.FLOAT
        graph = helper.make_graph(self.nodes, "m", [helper.make_tensor_value_info("x", elem, x_shape)],
                                  [helper.make_tensor_value_info("loss", elem, [])], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def mlp():
    b = Builder(np.float64)
    h = b.op("Relu", [b.op("Gemm", ["x", b.weight("w0", (16, 12)), b.weight("b0", (16,))], transB=1)])
    h = b.op("Relu", [b.op("Gemm", [h, b.weight("w1", (16, 16)), b.weight("b1", (16,))], transB=1)])
    logits = b.op("Gemm", [h, b.weight("w2", (5, 16)), b.weight("b2", (5,))], transB=1)
    b.op("SoftmaxCrossEntropyLoss", [logits, b.const("labels", np.array([0, 3, 4, 1], np.int64))], out="loss")
    return b, b.model([4, 12], 17), (4, 12)


def lenet():
    b = Builder(np.float32)
    h = b.op("Conv", ["x", b.weight("c1w", (4, 1, 3, 3)), b.weight("c1b", (4,))], pads=[1, 1, 1, 1],
             kernel_shape=[3, 3])
    h = b.op("MaxPool", [b.op("Relu", [h])], kernel_shape=[2, 2], strides=[2, 2])
    h = b.op("Conv", [h, b.weight("c2w", (6, 4, 3, 3)), b.weight("c2b", (6,))], kernel_shape=[3, 3])
    h = b.op("MaxPool", [b.op("Relu", [h])], kernel_shape=[2, 2], strides=[2, 2])
    h = b.op("Flatten", [h], axis=1)
    logits = b.op("Gemm", [h, b.weight("fw", (5, 6)), b.weight("fb", (5,))], transB=1)
    b.op("SoftmaxCrossEntropyLoss", [logits, b.const("labels", np.array([2, 4], np.int64))], out="loss")
    return b, b.model([2, 1, 8, 8], 17), (2, 1, 8, 8)


def encoder_layer():
    B, S, D, H, F = 2, 3, 8, 2, 16
    b = Builder(np.float64)

    def linear(x, n, din, dout):
        return b.op("Add", [b.op("MatMul", [x, b.weight(n + "_w", (din, dout))]), b.weight(n + "_b", (dout,), 0.1)])

    def heads(t):
        r = b.op("Reshape", [t, b.const(b.name("shape"), np.array([B, S, H, D // H], np.int64))])
        return b.op("Transpose", [r], perm=[0, 2, 1, 3])

    q, k, v = (heads(linear("x", n, D, D)) for n in ("q", "k", "v"))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const("scale", np.array(1 / np.sqrt(D // H), np.float64))])
    ctx = b.op("Transpose", [b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])], perm=[0, 2, 1, 3])
    ctx = b.op("Reshape", [ctx, b.const("merge", np.array([B, S, D], np.int64))])
    h = b.op("Add", ["x", linear(ctx, "o", D, D)])

    def norm(t, n):
        return b.op("LayerNormalization", [t, b.weight(n + "_g", (D,), 1.0), b.weight(n + "_b", (D,), 0.1)], axis=-1)

    h1 = norm(h, "ln1")
    # Gelu, tanh form, as elementwise ops (ONNX Runtime has no float64 Gelu or Erf kernel):
    # 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))
    a = linear(h1, "ff1", D, F)

    def c(name, v):
        return b.const(name, np.array(v, np.float64))

    cube = b.op("Mul", [b.op("Mul", [a, a]), a])
    inner = b.op("Mul", [b.op("Add", [a, b.op("Mul", [cube, c("k1", 0.044715)])]), c("k2", np.sqrt(2 / np.pi))])
    gelu = b.op("Mul", [b.op("Mul", [a, c("half", 0.5)]), b.op("Add", [b.op("Tanh", [inner]), c("one", 1.0)])])
    out = norm(b.op("Add", [h1, linear(gelu, "ff2", F, D)]), "ln2")
    r = b.const("R", np.random.default_rng(1).uniform(-1, 1, (B, S, D)))
    b.op("ReduceSum", [b.op("Mul", [out, r])], out="loss", keepdims=0)
    return b, b.model([B, S, D], 17), (B, S, D)


def check(name, factory, tmp):
    b, model, x_shape = factory()
    path = os.path.join(tmp, f"{name}.onnx")
    grad_path = os.path.join(tmp, f"{name}_grad.onnx")
    onnx.save(model, path)
    x = np.random.default_rng(2).uniform(-1, 1, x_shape).astype(b.dtype)
    np.save(os.path.join(tmp, f"{name}_x.npy"), x)
    subprocess.run([AICC, "autodiff", path, "--loss", "loss", "--wrt", "x", *b.weights, "-o", grad_path],
                   check=True, capture_output=True, text=True)
    out_dir = os.path.join(tmp, f"{name}_out")
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([AICC, "run", grad_path, "-O", "0", "--input", f"x={os.path.join(tmp, name + '_x.npy')}",
                    "--output-dir", out_dir], check=True, capture_output=True, text=True)
    grad_model = onnx.load(grad_path)
    names = [o.name for o in grad_model.graph.output]
    ours = [numpy_helper.to_array(onnx.load_tensor(os.path.join(out_dir, f"output_{i}.pb"))) for i in range(len(names))]
    sess = ort.InferenceSession(grad_path, providers=["CPUExecutionProvider"])
    theirs = sess.run(None, {"x": x})
    # Count, dtype and shape before values (numpy would broadcast a wrong shape).
    if len(ours) != len(theirs):
        raise Exception(f"{len(ours)} outputs, onnxruntime gives {len(theirs)}")
    for n, a, t in zip(names, ours, theirs):
        if a.dtype != t.dtype or a.shape != t.shape:
            raise Exception(f"{n}: {a.dtype}{list(a.shape)}, onnxruntime gives {t.dtype}{list(t.shape)}")
    worst, worst_name = 0.0, ""
    for n, a, t in zip(names, ours, theirs):
        scale = max(np.abs(t).max(), 1e-3)
        err = float(np.abs(a - t).max() / scale)
        if err > worst:
            worst, worst_name = err, n
    ok = worst < RTOL
    print(f"{name:<14} {len(names) - 1:2d} gradients  max rel diff aicc vs onnxruntime {worst:.2e} ({worst_name}) "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def main():
    with tempfile.TemporaryDirectory() as tmp:
        results = []
        for name, factory in [("mlp", mlp), ("lenet", lenet), ("encoder_layer", encoder_layer)]:
            try:
                results.append(check(name, factory, tmp))
            except subprocess.CalledProcessError as e:
                print(f"{name:<14} FAIL: {' '.join(e.cmd[:2])}: {e.stderr.strip()}")
                results.append(False)
            except Exception as e:  # onnxruntime errors
                print(f"{name:<14} FAIL: {e}")
                results.append(False)
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
