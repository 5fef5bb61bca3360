#!/usr/bin/env python3
"""Dynamically quantized models from ONNX Runtime's quantizer through aicc's int8 kernels.

    check_dynamic_quant.py AICC [ZOO_DIR] [SHARED_MODELS_DIR]

onnxruntime.quantization.quantize_dynamic (its defaults: int8 weights, DynamicQuantizeLinear
before each MatMul / Conv) of mnist-8 (bundled: ConvInteger and MatMulInteger), and where present
the zoo's mlp (MatMulInteger) and the shared ultraface-rfb-320 (ConvInteger, depthwise too).
`aicc compile` (fold-qdq: MatMulInteger -> Cast -> Mul into MatMulIntegerToFloat) and `aicc run`
give the outputs, compared with ONNX Runtime running the same model (graph optimizations off).
Asserts: no fallback task; every MatMulInteger runs on an int8 GEMM (@dqgemm_ where the CPU has
one, else MatMulInteger's exact float GEMM blocks) and every ConvInteger on an int8 convolution
kernel (@qconv2d_nchw_ / @qdwconv_nchw_), not the loop nest; outputs within 1% of the largest
output magnitude of ORT's (DynamicQuantizeLinear rounds its float input: a float difference
upstream, e.g. a different summation order, may move a value by one quantization step).
"""
import logging
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

ort.set_default_logger_severity(3)
logging.disable(logging.WARNING)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def check(aicc, label, model_path, data_dir, work):
    dq = os.path.join(work, label + ".dq.onnx")
    quantize_dynamic(model_path, dq, weight_type=QuantType.QInt8)
    m = onnx.load(dq, load_external_data=False)
    ops = {n.op_type for n in m.graph.node}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(dq, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: numpy_helper.to_array(onnx.load_tensor(os.path.join(data_dir, f"input_{k}.pb")))
             for k, i in enumerate(s.get_inputs())}
    refs = s.run(None, feeds)
    out = os.path.join(work, label + ".out")
    subprocess.run([aicc, "compile", dq, "-o", out], check=True, capture_output=True, text=True)
    subprocess.run([aicc, "run", out, "--inputs-dir", data_dir, "--output-dir", out + "/o"],
                   check=True, capture_output=True, text=True)
    report = open(os.path.join(out, "report.txt")).read()
    errors = []
    worst = 0.0
    for k, ref in enumerate(refs):
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "o", f"output_{k}.pb")))
        rel = float(np.max(np.abs(got.astype(np.float64) - ref))) / max(float(np.max(np.abs(ref))), 1e-30)
        worst = max(worst, rel)
        if rel > 1e-2:
            errors.append(f"{label}: output {k} is {rel:.4f} of its magnitude from ONNX Runtime's")
    gemms = report.count('micro_kernel = "u8s8_dqgemm_') + report.count("int8 operands, exact int32 sums")
    convs = report.count('micro_kernel = "qconv2d_nchw_') + report.count('micro_kernel = "qdwconv_nchw_')
    n_mm = sum(n.op_type == "MatMulInteger" for n in m.graph.node)
    n_conv = sum(n.op_type == "ConvInteger" for n in m.graph.node)
    print(f"{label:18} MatMulInteger {n_mm:3} -> int8 GEMM tasks {gemms:3}; ConvInteger {n_conv:3} -> "
          f"int8 conv tasks {convs:3}; max |aicc - ORT| / max |ORT| {worst:.2e}")
    if "MatMulInteger" in ops and gemms < n_mm:
        errors.append(f"{label}: {n_mm - gemms} MatMulInteger not on an int8 GEMM")
    if "ConvInteger" in ops and convs < n_conv:
        errors.append(f"{label}: {n_conv - convs} ConvInteger not on an int8 convolution kernel")
    fallbacks = next((int(line.split()[1]) for line in report.splitlines()
                      if line.split()[:1] == ["fallbacks"]), None)
    if fallbacks != 0:
        errors.append(f"{label}: {fallbacks} fallback tasks in the compiled model")
    return errors


def main():
    aicc = sys.argv[1]
    zoo = sys.argv[2] if len(sys.argv) > 2 else ""
    shared = sys.argv[3] if len(sys.argv) > 3 else ""
    cases = [("mnist-8", os.path.join(ROOT, "models", "mnist-8", "model.onnx"),
              os.path.join(ROOT, "models", "mnist-8", "test_data_set_0"))]
    mlp = os.path.join(zoo, "mlp.onnx")
    mlp_data = os.path.join(ROOT, "..", "shared", "zoo", "mlp", "test_data_set_0")
    if zoo and os.path.exists(mlp) and os.path.isdir(mlp_data):
        cases.append(("mlp", mlp, mlp_data))
    else:
        print(f"skipped: mlp (no {mlp} or {mlp_data}; materialize the zoo there)")
    uf = os.path.join(shared, "ultraface-rfb-320")
    if shared and os.path.isdir(uf):
        model = next(os.path.join(uf, f) for f in sorted(os.listdir(uf)) if f.endswith(".onnx"))
        cases.append(("ultraface-rfb-320", model, os.path.join(uf, "test_data_set_0")))
    else:
        print(f"skipped: ultraface-rfb-320 (no {uf})")
    errors = []
    with tempfile.TemporaryDirectory() as work:
        for label, model, data in cases:
            errors += check(aicc, label, model, data, work)
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
