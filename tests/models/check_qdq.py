#!/usr/bin/env python3
"""QDQ models from ONNX Runtime's quantizer through aicc's int8 kernels.

    check_qdq.py AICC [ZOO_DIR]

For mnist-8 (bundled; upgraded to opset 13, which per-channel DequantizeLinear needs) and, when
ZOO_DIR holds the materialized zoo, mobilenet_v2: after ORT's quant_pre_process (BatchNormalization
folded), onnxruntime.quantization.quantize_static writes a QDQ model (per-channel int8 weights, uint8 activations, calibrated on the model's test input and
seven perturbed copies); `aicc compile` (-O2: fold-qdq turns DQ -> Conv/MatMul/Add -> Q into
QLinearConv/QLinearMatMul/QLinearAdd) and `aicc run` give the output, which is compared, in steps
of the output's quantization scale, with ONNX Runtime running
  - the literal QDQ graph (graph optimizations off: float ops between Q and DQ), and
  - its own int8 kernels (graph optimizations on).
Asserts: the compiled model runs int8 convolution kernels; aicc is within 1 step of ORT's int8
result, and within (ORT int8's own distance from the QDQ graph) + 1 step of the QDQ graph: each
int8 layer may round differently from the float graph by one step, and deep networks compound it
(ORT's int8 kernels land 3 steps from the QDQ graph on mobilenet_v2).
"""
import logging
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper, version_converter
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

ort.set_default_logger_severity(3)
logging.disable(logging.WARNING)  # the quantizer's advice
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


class Reader(CalibrationDataReader):
    def __init__(self, name, x):
        rng = np.random.default_rng(0)
        noisy = [(x + rng.normal(0, 0.1 * x.std(), x.shape)).astype(np.float32) for _ in range(7)]
        self.it = iter([{name: x}] + [{name: v} for v in noisy])

    def get_next(self):
        return next(self.it, None)


def check(aicc, label, model_path, input_pb, work):
    m = onnx.load(model_path)
    if m.opset_import[0].version < 13:
        m = version_converter.convert_version(m, 13)
    src = os.path.join(work, label + ".onnx")
    if any(n.op_type == "BatchNormalization" for n in m.graph.node):
        raw = os.path.join(work, label + ".raw.onnx")
        onnx.save(m, raw)
        quant_pre_process(raw, src, skip_symbolic_shape=True)  # as ORT asks: BN folded into Conv
    else:
        onnx.save(m, src)
    name = m.graph.input[0].name
    x = numpy_helper.to_array(onnx.load_tensor(input_pb))
    qdq = os.path.join(work, label + ".qdq.onnx")
    quantize_static(src, qdq, Reader(name, x), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    refs = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        s = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"])
        refs.append(s.run(None, {name: x})[0])
    out = os.path.join(work, label + ".out")
    subprocess.run([aicc, "compile", qdq, "-o", out], check=True, capture_output=True, text=True)
    subprocess.run([aicc, "run", out, "--input", f"{name}={input_pb}", "--output-dir", out + "/o"],
                   check=True, capture_output=True, text=True)
    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "o", sorted(os.listdir(out + "/o"))[0])))
    q = onnx.load(qdq)
    last = next(n for n in q.graph.node if n.output[0] == q.graph.output[0].name)
    assert last.op_type == "DequantizeLinear", f"{label}: the output is not dequantized ({last.op_type})"
    scale = float(numpy_helper.to_array(next(i for i in q.graph.initializer if i.name == last.input[1])))
    steps = lambda a, b: float(np.max(np.abs(a.astype(np.float64) - b))) / scale
    vs_qdq, vs_int8, ort_own = steps(got, refs[0]), steps(got, refs[1]), steps(refs[1], refs[0])
    report = open(os.path.join(out, "report.txt")).read()
    kernels = report.count('micro_kernel = "qconv2d_nchw_') + report.count('micro_kernel = "qdwconv_nchw_')
    print(f"{label:14} int8 conv tasks {kernels:3}   steps of the output scale: aicc vs ORT QDQ graph "
          f"{vs_qdq:.2f}, aicc vs ORT int8 {vs_int8:.2f}, ORT int8 vs ORT QDQ graph {ort_own:.2f}")
    errors = []
    if kernels == 0:
        errors.append(f"{label}: no int8 convolution kernel in the compiled model")
    if vs_int8 > 1 + 1e-3:
        errors.append(f"{label}: {vs_int8:.2f} steps from ONNX Runtime's int8 result")
    if vs_qdq > ort_own + 1 + 1e-3:
        errors.append(f"{label}: {vs_qdq:.2f} steps from the QDQ graph (ONNX Runtime: {ort_own:.2f})")
    return errors


def main():
    aicc = sys.argv[1]
    zoo = sys.argv[2] if len(sys.argv) > 2 else ""
    cases = [("mnist-8", os.path.join(ROOT, "models", "mnist-8", "model.onnx"),
              os.path.join(ROOT, "models", "mnist-8", "test_data_set_0", "input_0.pb"))]
    zoo_model = os.path.join(zoo, "mobilenet_v2.onnx")
    zoo_input = os.path.join(ROOT, "..", "shared", "zoo", "mobilenet_v2", "test_data_set_0", "input_0.pb")
    if zoo and os.path.exists(zoo_model) and os.path.exists(zoo_input):
        cases.append(("mobilenet_v2", zoo_model, zoo_input))
    else:
        print(f"skipped: mobilenet_v2 (no {zoo_model} or no {zoo_input}; materialize the zoo there)")
    errors = []
    with tempfile.TemporaryDirectory() as work:
        for label, model, inp in cases:
            errors += check(aicc, label, model, inp, work)
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
