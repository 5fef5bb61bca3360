"""Builds the small CNN as ONNX (opset 17) with the loss inside the graph, plus its initial weights.

  X f32[N,1,8,8] -> Conv 3x3 (16, pad 1) -> Relu -> MaxPool 2 -> Conv 3x3 (32, pad 1) -> Relu
    -> MaxPool 2 -> Flatten -> Gemm 128x64 -> Relu -> Gemm 64x10 = logits
  loss = SoftmaxCrossEntropyLoss(logits, Y) (mean)
Outputs: loss, logits. Weights: PyTorch's default init (Kaiming-uniform, a=sqrt(5)) from a fixed
seed, also written to init_weights.npz so the PyTorch script starts from the same point.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1] if len(sys.argv) > 1 else "."
rng = np.random.default_rng(0)


def uniform(shape, fan_in):
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


w = {
    "conv1.weight": uniform((16, 1, 3, 3), 9), "conv1.bias": uniform((16,), 9),
    "conv2.weight": uniform((32, 16, 3, 3), 144), "conv2.bias": uniform((32,), 144),
    "fc1.weight": uniform((64, 128), 128), "fc1.bias": uniform((64,), 128),
    "fc2.weight": uniform((10, 64), 64), "fc2.bias": uniform((10,), 64),
}
nodes = [
    helper.make_node("Conv", ["X", "conv1.weight", "conv1.bias"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
    helper.make_node("Relu", ["c1"], ["r1"]),
    helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
    helper.make_node("Relu", ["c2"], ["r2"]),
    helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Flatten", ["p2"], ["f"], axis=1),
    helper.make_node("Gemm", ["f", "fc1.weight", "fc1.bias"], ["h"], transB=1),
    helper.make_node("Relu", ["h"], ["hr"]),
    helper.make_node("Gemm", ["hr", "fc2.weight", "fc2.bias"], ["logits"], transB=1),
    helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "Y"], ["loss"], reduction="mean"),
]
graph = helper.make_graph(
    nodes, "digits_cnn",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 1, 8, 8]),
     helper.make_tensor_value_info("Y", TensorProto.INT64, ["N"])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
    [numpy_helper.from_array(v, k) for k, v in w.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="train_digits")
onnx.checker.check_model(model, full_check=True)
onnx.save(model, f"{out}/digits_cnn.onnx")
np.savez(f"{out}/init_weights.npz", **w)
print(f"wrote {out}/digits_cnn.onnx and {out}/init_weights.npz")
