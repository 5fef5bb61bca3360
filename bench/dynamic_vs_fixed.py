#!/usr/bin/env python3
"""Dynamic artifacts against fixed-size ones (issue #12's speed goal: within 10%), at the zoo's
reference sizes, in alternating rounds (`aicc bench` on each compiled folder, medians in ms):
- resnet50 and mobilenet_v2 with a symbolic batch N (1..16), run at batch 1;
- bert_like_encoder with a symbolic batch N, and with its sequence length S symbolic (1..128;
  its export baked 128 into Reshape shapes, rewritten to -1 as tests/models/check_dynamic_shapes.py
  does), run at 1x128;
- with --spatial, the CNNs with N, H and W symbolic (1..1024), run at 1x3x224x224 (the blocked
  NCHW16c layout judged at the sides' upper ends, docs/backend.md step 4).

    .venv/bin/python bench/dynamic_vs_fixed.py ZOO [--refs ../shared/zoo] [--aicc build/aicc]
        [--threads 1] [--rounds 3] [--iters 20] [--spatial] [--models resnet50,...]

ZOO holds the materialized zoo (python3 ../shared/zoo/materialize.py ZOO).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
from symbolic_zoo import length_symbolic, renamed  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("zoo")
ap.add_argument("--refs", default="../shared/zoo")
ap.add_argument("--aicc", default="build/aicc")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--iters", type=int, default=20)
ap.add_argument("--spatial", action="store_true")
ap.add_argument("--models", default="resnet50,mobilenet_v2,bert_like_encoder")
a = ap.parse_args()


def compile_(model, out, *flags):
    r = subprocess.run([a.aicc, "compile", model, "-o", out, *flags], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"aicc compile {model} {' '.join(flags)} failed:\n{r.stderr}")
    return out


def bench(folder, inputs):
    js = folder + ".json"
    subprocess.run([a.aicc, "bench", folder, "--inputs-dir", inputs, "--iters", str(a.iters),
                    "--threads", str(a.threads), "--json", js], check=True, capture_output=True)
    return json.load(open(js))["times_ms"]


tmp = tempfile.mkdtemp(prefix="aicc_dynfix_")
rows = []  # (model, what, fixed folder, dynamic folder, inputs)
for name in a.models.split(","):
    model = os.path.join(a.zoo, name + ".onnx")
    inputs = os.path.join(a.refs, name, "test_data_set_0")
    fixed = compile_(model, os.path.join(tmp, name + "_fixed"))
    variants = [("batch N", [(0, "N")], [])]
    if name == "bert_like_encoder":
        variants.append(("length S", None, ["--dim", "S=1..128"]))
    elif a.spatial:
        variants.append(("N, H, W", [(0, "N"), (2, "H"), (3, "W")], []))
    for what, dims, flags in variants:
        # Next to the original, so its external weights resolve.
        copy = os.path.join(a.zoo, f".{name}.{what.replace(', ', '').replace(' ', '')}.onnx")
        onnx.save(renamed(model, dims) if dims else length_symbolic(model), copy)
        try:
            dyn = compile_(copy, os.path.join(tmp, f"{name}_{what.replace(', ', '').replace(' ', '')}"),
                           *flags)
        finally:
            os.remove(copy)
        rows.append((name, what, fixed, dyn, inputs))

times = {(r[0], r[1], k): [] for r in rows for k in ("fixed", "dynamic")}
for _ in range(a.rounds):
    for name, what, fixed, dyn, inputs in rows:
        times[(name, what, "fixed")] += bench(fixed, inputs)
        times[(name, what, "dynamic")] += bench(dyn, inputs)
print(f"{a.threads} thread(s), {a.rounds} alternating rounds of {a.iters} runs, medians:")
for name, what, *_ in rows:
    f = statistics.median(times[(name, what, "fixed")])
    d = statistics.median(times[(name, what, "dynamic")])
    print(f"{name:18s} {what:9s} fixed {f:8.3f} ms  dynamic {d:8.3f} ms  dynamic/fixed {d / f:.3f}")
