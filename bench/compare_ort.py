#!/usr/bin/env python3
"""Median latency of the zoo models under ONNX Runtime (and aicc, when it can bench) at 1 and 2 threads.

    .venv/bin/python bench/compare_ort.py [--zoo /tmp/zoo] [--models resnet50,mobilenet_v2]
        [--threads 1,2] [--rounds 5] [--iters 10] [--aicc build/aicc] [--json out.json]

The zoo is materialized into --zoo first when missing (/work/shared/zoo/materialize.py or --zoo-src).
Configurations run alternately, round by round (ORT 1 thread, ORT 2 threads, aicc 1 thread, ...,
each for --iters runs), so background load on the machine hits every configuration alike; the
reported number is the median over all timed runs (after one warm-up round that is not counted).

aicc is optional: it is timed only when `AICC bench --help` lists --iters and --threads, as
    AICC bench TARGET --threads N --iters N --json FILE
where FILE must receive a JSON object with "times_ms" (a list, one entry per run) or "median_ms".
Otherwise its columns print "n/a". TARGET is, with --aicc-mode artifact (default), the folder that
`aicc compile MODEL -o DIR` wrote once per model before timing (the deployable .so); with
--aicc-mode jit, the .onnx itself (compiled in memory by every `aicc bench` call).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

DEFAULT_ZOO_SRC = "/work/shared/zoo"
ORT_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
    "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(float16)": np.float16,
}


def materialize(zoo, zoo_src, models):
    missing = [m for m in models if not os.path.exists(os.path.join(zoo, m + ".onnx"))]
    if not missing:
        return
    script = os.path.join(zoo_src, "materialize.py")
    print(f"materializing {', '.join(missing)} into {zoo}", file=sys.stderr)
    subprocess.run([sys.executable, script, zoo] + missing, check=True)


def model_inputs(sess, zoo_src, name):
    """The zoo's recorded input when present, else deterministic random data (symbolic dims = 1)."""
    feeds = {}
    data_dir = os.path.join(zoo_src, name, "test_data_set_0")
    for i, inp in enumerate(sess.get_inputs()):
        pb = os.path.join(data_dir, f"input_{i}.pb")
        if os.path.exists(pb):
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            feeds[inp.name] = numpy_helper.to_array(t)
            continue
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
        dtype = ORT_TYPES.get(inp.type, np.float32)
        rng = np.random.default_rng(0)
        feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def aicc_available(aicc):
    if not aicc or not os.path.exists(aicc):
        return False
    try:
        r = subprocess.run([aicc, "bench", "--help"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    # CLI11 answers --help for unknown words too; require the bench command's own options.
    return r.returncode == 0 and b"--iters" in r.stdout and b"--threads" in r.stdout


def aicc_round(aicc, model_path, threads, iters):
    """Times `iters` runs through `aicc bench`; returns per-run ms (or None on failure)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        r = subprocess.run([aicc, "bench", model_path, "--threads", str(threads), "--iters",
                            str(iters), "--json", out], capture_output=True, text=True,
                           timeout=1800)
        if r.returncode != 0:
            print(f"aicc bench failed on {model_path}: {r.stderr.strip()[-300:]}", file=sys.stderr)
            return None
        with open(out) as f:
            res = json.load(f)
        if "times_ms" in res:
            return [float(x) for x in res["times_ms"]]
        if "median_ms" in res:
            return [float(res["median_ms"])]
        return None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        print(f"aicc bench error on {model_path}: {e}", file=sys.stderr)
        return None
    finally:
        if os.path.exists(out):
            os.unlink(out)


def fmt(v):
    return "n/a" if v is None else f"{v:8.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", default="/tmp/zoo", help="materialized models (NAME.onnx)")
    ap.add_argument("--zoo-src", default=DEFAULT_ZOO_SRC, help="zoo skeletons + materialize.py")
    ap.add_argument("--models", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10, help="runs per configuration per round")
    default_aicc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "aicc")
    ap.add_argument("--aicc", default=default_aicc, help="aicc binary ('' to skip)")
    ap.add_argument("--json", default="", help="write the results here")
    ap.add_argument("--aicc-mode", default="artifact", choices=["artifact", "jit"],
                    help="time a compiled artifact (default) or the JIT")
    args = ap.parse_args()

    all_models = sorted(f[:-5] for f in os.listdir(args.zoo_src) if f.endswith(".onnx"))
    models = [m for m in args.models.split(",") if m] or all_models
    threads = [int(t) for t in args.threads.split(",")]
    materialize(args.zoo, args.zoo_src, models)
    use_aicc = aicc_available(args.aicc)

    print(f"onnxruntime {ort.__version__}, {os.cpu_count()} CPUs, rounds={args.rounds} x iters={args.iters}; "
          f"aicc: {'yes' if use_aicc else 'n/a (no `aicc bench`)'}")
    header = f"{'model':<20}" + "".join(f" {'ORT ' + str(t) + 't ms':>11}" for t in threads) + \
        "".join(f" {'aicc ' + str(t) + 't ms':>12}" for t in threads) + \
        "".join(f" {'aicc/ORT ' + str(t) + 't':>13}" for t in threads)
    print(header)
    results = {}
    artifacts = tempfile.mkdtemp(prefix="aicc_bench_")
    for name in models:
        path = os.path.join(args.zoo, name + ".onnx")
        target = path
        if use_aicc and args.aicc_mode == "artifact":
            target = os.path.join(artifacts, name)
            r = subprocess.run([args.aicc, "compile", path, "-o", target], capture_output=True,
                               text=True)
            if r.returncode != 0:
                print(f"aicc compile failed on {name}: {r.stderr.strip()[-300:]}", file=sys.stderr)
                target = path
        sessions = {t: ort_session(path, t) for t in threads}
        feeds = model_inputs(sessions[threads[0]], args.zoo_src, name)
        times = {("ort", t): [] for t in threads}
        if use_aicc:
            times.update({("aicc", t): [] for t in threads})
        aicc_failed = set()
        for rnd in range(args.rounds + 1):  # round 0 warms up
            for t in threads:
                sess = sessions[t]
                for _ in range(args.iters if rnd else 2):
                    t0 = time.perf_counter()
                    sess.run(None, feeds)
                    if rnd:
                        times[("ort", t)].append((time.perf_counter() - t0) * 1e3)
            if use_aicc:
                for t in threads:
                    if t in aicc_failed:
                        continue
                    r = aicc_round(args.aicc, target, t, args.iters if rnd else 1)
                    if r is None:
                        aicc_failed.add(t)
                    elif rnd:
                        times[("aicc", t)].extend(r)
        med = {k: (statistics.median(v) if v else None) for k, v in times.items()}
        ort_ms = [med[("ort", t)] for t in threads]
        aicc_ms = [med.get(("aicc", t)) for t in threads]
        ratios = [None if a is None else a / o for a, o in zip(aicc_ms, ort_ms)]
        print(f"{name:<20}" + "".join(f" {fmt(v):>11}" for v in ort_ms) +
              "".join(f" {fmt(v):>12}" for v in aicc_ms) +
              "".join(f" {fmt(v):>13}" for v in ratios), flush=True)
        results[name] = {f"{k[0]}_{k[1]}t_ms": v for k, v in med.items()}
        del sessions
    shutil.rmtree(artifacts, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"onnxruntime": ort.__version__, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
