#!/usr/bin/env python3
"""`aicc quantize` on mnist-8, judged on real digits (issue #13's accuracy check).

    check_quantize.py AICC

scikit-learn's 1797 bundled 8x8 digits, each upsampled bilinearly to 20x20 and centred in a 28x28
frame (as MNIST frames its digits), scaled to 0..255. `aicc quantize` calibrates on the first 100
(min-max) and writes a QDQ model. Both models then classify all 1797 digits: the float model with
ONNX Runtime, the quantized one with aicc's int8 kernels (the `aicc` Python package: JIT, fold-qdq
-> QLinearConv/QLinearMatMul) and with ONNX Runtime (which must load the QDQ model). Asserts: top-1
agreement of aicc's int8 with float >= 99%, and aicc's int8 top-1 equal to ONNX Runtime's on >= 99%
of the digits. Also: `aicc compile --precision int8 --calibration DIR` gives int8 convolutions, and
without --calibration it is a one-line error (status 1).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from scipy import ndimage
from sklearn.datasets import load_digits

ort.set_default_logger_severity(3)
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "mnist-8", "model.onnx")


def digits():
    imgs = load_digits().images  # (1797, 8, 8), 0..16
    out = np.zeros((len(imgs), 1, 1, 28, 28), np.float32)
    for i, im in enumerate(imgs):
        big = ndimage.zoom(im / 16.0 * 255.0, 20 / 8, order=1)  # bilinear, 20x20
        out[i, 0, 0, 4:24, 4:24] = np.clip(big, 0, 255)
    return out


def main():
    aicc = sys.argv[1]
    x = digits()
    name = onnx.load(MODEL).graph.input[0].name
    with tempfile.TemporaryDirectory() as work:
        for i in range(100):
            d = os.path.join(work, "calib", f"test_data_set_{i}")
            os.makedirs(d)
            onnx.save_tensor(numpy_helper.from_array(x[i], name), os.path.join(d, "input_0.pb"))
        qdq = os.path.join(work, "mnist-8.int8.onnx")
        r = subprocess.run([aicc, "quantize", MODEL, "--calibration", os.path.join(work, "calib"), "-o", qdq],
                           capture_output=True, text=True)
        print(r.stdout.strip().splitlines()[0] if r.returncode == 0 else r.stderr)
        if r.returncode != 0:
            return 1
        last = r.stdout.strip().splitlines()[-1]
        print(last)
        if "top-1 agreement" not in last:  # the report's classifier line
            print("FAIL: aicc quantize did not report top-1 agreement for the classifier output")
            return 1
        # The shortcut: `aicc compile --precision int8 --calibration DIR` quantizes the same way.
        out = os.path.join(work, "compiled")
        r = subprocess.run([aicc, "compile", MODEL, "-o", out, "--precision", "int8", "--calibration",
                            os.path.join(work, "calib")], capture_output=True, text=True)
        report = open(os.path.join(out, "report.txt")).read() if r.returncode == 0 else ""
        if r.returncode != 0 or 'micro_kernel = "qconv2d_nchw_' not in report:
            print(f"FAIL: compile --precision int8: {r.stderr.strip() or 'no int8 convolution in the report'}")
            return 1
        r = subprocess.run([aicc, "compile", MODEL, "-o", out, "--precision", "int8"], capture_output=True, text=True)
        if r.returncode != 1 or "needs --calibration" not in r.stderr:
            print(f"FAIL: --precision int8 without --calibration: status {r.returncode}, {r.stderr.strip()}")
            return 1
        f32 = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
        q_ort = ort.InferenceSession(qdq, providers=["CPUExecutionProvider"])
        ref = np.array([f32.run(None, {name: v})[0].argmax() for v in x])
        ort_int8 = np.array([q_ort.run(None, {name: v})[0].argmax() for v in x])
        try:
            import aicc as aicc_py
        except ImportError as e:
            print(f"FAIL: the aicc Python package is needed for aicc's int8 run ({e})")
            return 1
        s = aicc_py.InferenceSession(qdq)
        ours = np.array([s.run(None, {name: v})[0].argmax() for v in x])
    agree = float(np.mean(ours == ref)) * 100
    same_as_ort = float(np.mean(ours == ort_int8)) * 100
    print(f"top-1 agreement with float on {len(x)} digits: aicc int8 {agree:.2f}%, "
          f"ONNX Runtime on the same QDQ model {float(np.mean(ort_int8 == ref)) * 100:.2f}%; "
          f"aicc int8 = ONNX Runtime int8 on {same_as_ort:.2f}%")
    ok = agree >= 99.0 and same_as_ort >= 99.0
    if not ok:
        print("FAIL: below 99%")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
