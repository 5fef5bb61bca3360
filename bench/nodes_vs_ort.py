#!/usr/bin/env python3
"""Per-node time of aicc's JIT against ONNX Runtime's profile on one model, largest gap first.

    .venv/bin/python bench/nodes_vs_ort.py /tmp/zoo/efficientnet_b0.onnx [--aicc build/aicc]
        [--threads 1] [--iters 20] [--top 30]

aicc: `aicc bench MODEL --profile --json` (time per task). ONNX Runtime: its own profiler
(enable_profiling, ORT_ENABLE_ALL, median kernel time per node over the runs). The two name nodes
differently (ORT names a fused Conv after the BatchNormalization or Relu it absorbed, and a node its
NCHWc transformer made after its output tensor: those are traced back to the Conv in the original
graph), so both are matched by their path without the last numbered component (`.../block.0/block.0.0/Conv` and
`.../block.0/block.0.1/BatchNormalization_output_0_nchwc` both become `.../block.0/block.0`): a
row is such a block, its aicc and ORT milliseconds and the difference. Inputs are random (shapes
from the model, symbolic dims 1). Where the time goes is what this is for; the end-to-end
comparison is bench/compare.py.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def block(name):
    name = re.sub(r"^node '|' \(.*$", "", name)
    # ORT's fusions append their own component (".../block.0.2/Mul/QuickGeluFusion/")
    name = re.sub(r"/\w*Fusion/?$", "", name)
    # ORT's NHWC layout transformer for quantized ops renames them "<node>_token_<n>".
    name = re.sub(r"_token_\d+$", "", name)
    return re.sub(r"\.\d+/[^/]*$", "", name) if "/" in name else name


def nchwc_heads(model):
    """ORT's NCHWc transformer names a fused node after its output tensor ("/layer1/layer1.0/relu/
    Relu_output_0_nchwc": Conv + BatchNormalization + Add + Relu). Maps such a name to the head op
    that produced the chain in the original graph (the Conv), as aicc names its fused task: back
    through the chain's elementwise ops, into the most recently computed input (a residual Add's
    other input comes from an earlier block)."""
    import onnx
    g = onnx.load(model, load_external_data=False).graph
    producer = {o: (i, n) for i, n in enumerate(g.node) for o in n.output}
    chain = {"Relu", "Clip", "Add", "Sum", "BatchNormalization", "HardSwish", "LeakyRelu"}

    def head(name):
        if not name.endswith("_nchwc") or name[: -len("_nchwc")] not in producer:
            return name
        n = producer[name[: -len("_nchwc")]][1]
        while n.op_type in chain:
            ins = [x for x in n.input if x in producer]
            if not ins:
                break
            n = producer[max(ins, key=lambda x: producer[x][0])][1]
        return n.name or name
    return head


def symbolic_dims(model):
    """`--dim NAME=1` for each named symbolic input dim (ONNX Runtime's feeds below use 1 too)."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    names = {d.dim_param for i in m.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param}
    return [a for n in sorted(names) for a in ("--dim", f"{n}=1")]


def aicc_times(aicc, model, threads, iters):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "bench.json")
        subprocess.run([aicc, "bench", model, "--profile", "--threads", str(threads), "--iters",
                        str(iters), "--json", out] + symbolic_dims(model), check=True,
                       capture_output=True)
        tasks = json.load(open(out))["tasks"]
    t = collections.defaultdict(float)
    for x in tasks:
        t[block(x["node"])] += x["ms_per_run"]
    return t


def ort_times(model, threads, iters):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.gettempdir(), "nodes_vs_ort")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        kind = np.float32 if "float" in i.type else np.int64
        feeds[i.name] = np.random.rand(*shape).astype(kind)
    for _ in range(iters + 3):
        s.run(None, feeds)
    path = s.end_profiling()
    runs = collections.defaultdict(list)
    for e in json.load(open(path)):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            runs[e["name"][: -len("_kernel_time")]].append(e["dur"] / 1000.0)
    os.remove(path)
    head = nchwc_heads(model)
    t = collections.defaultdict(float)
    for n, d in runs.items():
        t[block(head(n))] += statistics.median(d)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--aicc", default=os.path.join(os.path.dirname(__file__), "..", "build", "aicc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    mine = aicc_times(a.aicc, a.model, a.threads, a.iters)
    theirs = ort_times(a.model, a.threads, a.iters)
    print(f"# {os.path.basename(a.model)}, {a.threads} thread(s): aicc {sum(mine.values()):.2f} ms "
          f"in tasks, ONNX Runtime {sum(theirs.values()):.2f} ms in kernels")
    print(f"{'aicc ms':>8} {'ORT ms':>8} {'diff':>8}  block")
    keys = sorted(set(mine) | set(theirs), key=lambda k: -(mine.get(k, 0) - theirs.get(k, 0)))
    for k in keys[: a.top]:
        print(f"{mine.get(k, 0):8.3f} {theirs.get(k, 0):8.3f} {mine.get(k, 0) - theirs.get(k, 0):+8.3f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
