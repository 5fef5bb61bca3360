#!/usr/bin/env python3
"""silero-vad-v5 (../shared/models) at its reference input (512 samples at 16 kHz), 1 thread:
aicc's dynamic artifact (compiled with no flags: its size classes, docs/backend.md "Step 6"),
aicc's fixed-size artifact (--shape input=1,512 --shape state=2,1,128) and ONNX Runtime, in
alternating rounds; medians in ms and aicc/ORT.

    .venv/bin/python bench/silero_v5.py [--model ../shared/models/silero-vad-v5/model.onnx]
        [--aicc build/aicc] [--rounds 3] [--iters 2000]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="../shared/models/silero-vad-v5/model.onnx")
ap.add_argument("--aicc", default="build/aicc")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--iters", type=int, default=2000)
a = ap.parse_args()

data = os.path.join(os.path.dirname(a.model), "test_data_set_0")
tmp = tempfile.mkdtemp(prefix="aicc_silero_")
arts = {"aicc dynamic": [], "aicc fixed": ["--shape", "input=1,512", "--shape", "state=2,1,128"]}
for name, flags in arts.items():
    out = os.path.join(tmp, name.replace(" ", "_"))
    subprocess.run([a.aicc, "compile", a.model, "-o", out, *flags], check=True,
                   capture_output=True)
    arts[name] = out


def aicc(folder):
    js = os.path.join(tmp, "bench.json")
    subprocess.run([a.aicc, "bench", folder, "--inputs-dir", data, "--iters", str(a.iters),
                    "--warmup", "50", "--json", js], check=True, capture_output=True)
    return json.load(open(js))["times_ms"]


def ort():
    import onnxruntime as rt
    so = rt.SessionOptions()
    so.intra_op_num_threads = 1
    so.execution_mode = rt.ExecutionMode.ORT_SEQUENTIAL
    s = rt.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    ins = {i.name: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"input_{k}.pb")))
           for k, i in enumerate(s.get_inputs())}
    for _ in range(50):
        s.run(None, ins)
    t = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        s.run(None, ins)
        t.append((time.perf_counter() - t0) * 1e3)
    return t


times = {k: [] for k in [*arts, "onnxruntime"]}
for r in range(a.rounds):
    for name, folder in arts.items():
        times[name] += aicc(folder)
    times["onnxruntime"] += ort()
base = statistics.median(times["onnxruntime"])
for name, t in times.items():
    m = statistics.median(t)
    print(f"{name:14s} median {m:.4f} ms  ({m / base:.2f}x ONNX Runtime)")
