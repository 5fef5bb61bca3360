#!/usr/bin/env python3
"""`aicc quantize` against ONNX Runtime's quantize_static on trained shared models (issue #13).

    check_quantize_sqnr.py AICC SHARED_MODELS_DIR

For ultraface-rfb-320 and ppocrv4-rec: both quantizers calibrate on the model's test input
(ORT: quant_pre_process, then quantize_static QDQ with per-channel int8 weights, uint8
activations, min-max; aicc: `aicc quantize --min-sqnr 20`, min-max, mixed precision where the
all-int8 model falls short). Each quantized model runs on the same input; SQNR of every output
against the float model (ONNX Runtime). aicc's model is run twice: by ONNX Runtime (standard QDQ)
and compiled by aicc (int8 kernels). Asserts: on every output, aicc's SQNR (its own run) >= ORT's.
Skips (exit 77, saying why) without the shared models.
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
logging.disable(logging.WARNING)
MODELS = ["ultraface-rfb-320", "ppocrv4-rec"]


def sqnr(ref, got):
    noise = np.sum((ref.astype(np.float64) - got) ** 2)
    return float("inf") if noise == 0 else float(10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / noise))


def ort_quantized(m, feeds, work):
    if m.opset_import[0].version < 13:
        m = version_converter.convert_version(m, 13)
    onnx.save(m, work + "/raw.onnx")
    quant_pre_process(work + "/raw.onnx", work + "/pre.onnx", skip_symbolic_shape=True)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([feeds])

        def get_next(self):
            return next(self.it, None)

    quantize_static(work + "/pre.onnx", work + "/ort.onnx", Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return work + "/ort.onnx"


def main():
    aicc, shared = sys.argv[1], sys.argv[2]
    if not all(os.path.isdir(os.path.join(shared, n)) for n in MODELS):
        print(f"skipped: {', '.join(MODELS)} not found under {shared}")
        return 77
    errors = []
    for name in MODELS:
        d = os.path.join(shared, name)
        m = onnx.load(os.path.join(d, "model.onnx"))
        inits = {i.name for i in m.graph.initializer}
        inputs = [i.name for i in m.graph.input if i.name not in inits]
        files = [os.path.join(d, "test_data_set_0", f"input_{k}.pb") for k in range(len(inputs))]
        feeds = {n: numpy_helper.to_array(onnx.load_tensor(f)) for n, f in zip(inputs, files)}
        ref = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"]).run(None, feeds)
        with tempfile.TemporaryDirectory() as work:
            ours = work + "/aicc.onnx"
            r = subprocess.run([aicc, "quantize", os.path.join(d, "model.onnx"), "--calibration",
                                os.path.join(d, "test_data_set_0"), "-o", ours, "--min-sqnr", "20"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"{name}: aicc quantize failed: {r.stderr.strip()}")
                continue
            print("\n".join(l for l in r.stdout.splitlines() if not l.startswith("  ") or "float" in l or "SQNR" in l))
            by_ort = ort.InferenceSession(ours, providers=["CPUExecutionProvider"]).run(None, feeds)
            shapes = [f"{n}={','.join(map(str, v.shape))}" for n, v in feeds.items()]  # symbolic dims
            subprocess.run([aicc, "compile", ours, "-o", work + "/c"] + sum((["--shape", s] for s in shapes), []),
                           check=True, capture_output=True)
            run = [aicc, "run", work + "/c", "--output-dir", work + "/o"]
            for n, f in zip(inputs, files):
                run += ["--input", f"{n}={f}"]
            subprocess.run(run, check=True, capture_output=True)
            by_aicc = [numpy_helper.to_array(onnx.load_tensor(os.path.join(work, "o", f"output_{k}.pb")))
                       for k in range(len(ref))]
            theirs = ort.InferenceSession(ort_quantized(m, feeds, work), providers=["CPUExecutionProvider"]).run(None, feeds)
        for k in range(len(ref)):
            a, a_ort, o = sqnr(ref[k], by_aicc[k]), sqnr(ref[k], by_ort[k]), sqnr(ref[k], theirs[k])
            print(f"{name} output {k}: SQNR aicc quantize {a:.1f} dB (aicc's int8 kernels; {a_ort:.1f} dB "
                  f"run by ONNX Runtime), ONNX Runtime quantize_static {o:.1f} dB")
            if a < o:
                errors.append(f"{name} output {k}: {a:.1f} dB < ONNX Runtime's {o:.1f} dB")
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
