#!/usr/bin/env python3
"""A Scan RNN (issue #12's compiled loops): T steps of s = tanh(s @ W + x_t), W 256x256, compiled
by `aicc compile` (the Scan a `repeat` region of the task sequence) against ONNX Runtime, in
alternating rounds, median milliseconds at one thread, and the ratio.

    .venv/bin/python bench/scan_rnn.py [--aicc build/aicc] [--steps 512] [--rounds 3] [--iters 30]
"""
import argparse
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def model(steps, width):
    w = np.random.default_rng(0).standard_normal((width, width)).astype(np.float32) * 0.05
    vec = lambda name: h.make_tensor_value_info(name, T.FLOAT, [1, width])
    body = h.make_graph([h.make_node("MatMul", ["s", "W"], ["m"]), h.make_node("Add", ["m", "x"], ["a"]),
                         h.make_node("Tanh", ["a"], ["s2"]), h.make_node("Identity", ["s2"], ["y"])],
                        "step", [vec("s"), vec("x")], [vec("s2"), vec("y")])
    g = h.make_graph([h.make_node("Scan", ["s0", "xs"], ["sf", "ys"], body=body, num_scan_inputs=1)],
                     "rnn", [vec("s0"), h.make_tensor_value_info("xs", T.FLOAT, [steps, 1, width])],
                     [vec("sf"), h.make_tensor_value_info("ys", T.FLOAT, [steps, 1, width])],
                     [nh.from_array(w, "W")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--aicc", default="build/aicc")
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=30)
    a = ap.parse_args()
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as tmp:
        path, art = os.path.join(tmp, "rnn.onnx"), os.path.join(tmp, "art")
        onnx.save(model(a.steps, 256), path)
        subprocess.run([a.aicc, "compile", path, "-o", art], check=True, capture_output=True)
        plan = open(os.path.join(art, "model.plan")).read()
        print(f"compiled: {plan.count(chr(10) + 'repeat ')} repeat region(s), "
              f"{plan.count(chr(10) + 'fallback ')} fallback task(s)")
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        feeds = {"s0": np.zeros((1, 256), np.float32),
                 "xs": np.random.default_rng(1).standard_normal((a.steps, 1, 256)).astype(np.float32)}
        for _ in range(3):
            sess.run(None, feeds)
        for r in range(a.rounds):
            out = subprocess.run([a.aicc, "bench", art, "--iters", str(a.iters), "--threads", "1",
                                  "--pin-threads"], check=True, capture_output=True, text=True).stdout
            ours = float(re.search(r"median ([0-9.]+) ms", out).group(1))
            times = []
            for _ in range(a.iters):
                t0 = time.perf_counter()
                sess.run(None, feeds)
                times.append(time.perf_counter() - t0)
            theirs = 1000 * float(np.median(times))
            print(f"round {r}: aicc {ours:.3f} ms, onnxruntime {theirs:.3f} ms, "
                  f"aicc/ort {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
