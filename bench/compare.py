#!/usr/bin/env python3
"""Median latency of the zoo models under aicc, ONNX Runtime and OpenVINO at 1 and 2 threads.

    .venv/bin/python bench/compare.py [--zoo /tmp/zoo] [--models resnet50,mobilenet_v2]
        [--threads 1,2] [--rounds 3] [--iters 10] [--aicc build/aicc] [--json out.json]
        [--markdown] [--precision f32|bf16]

Peers: ONNX Runtime (CPU EP, ORT_ENABLE_ALL, sequential, intra_op_num_threads = T) and OpenVINO
(CPU plugin, INFERENCE_PRECISION_HINT=f32, PERFORMANCE_HINT=LATENCY, one stream,
INFERENCE_NUM_THREADS = T), both from PyPI (`pip install -r bench/requirements.txt`); a peer that
is not installed prints "n/a". aicc: each model is compiled once (`aicc compile MODEL -o DIR`,
target native) and the artifact is timed by `aicc bench DIR --threads T --iters N --json F`
(--aicc-mode jit times the JIT on the .onnx instead).

--precision bf16 compares the low-precision modes: aicc compiles with `--precision bf16` and
OpenVINO runs with INFERENCE_PRECISION_HINT=bf16 (its default on CPUs with AVX512-BF16 or AMX);
ONNX Runtime's CPU provider has no bf16 mode and stays f32.

Configurations run alternately, round by round (ORT 1 thread, ORT 2 threads, OpenVINO 1 thread,
..., aicc 2 threads; each for --iters runs), so background load hits every configuration alike;
aicc runs with --pin-threads (its threads bound to CPUs, as OpenVINO's are by default; --no-pin
times it unpinned, as ONNX Runtime runs); the reported number is the median over all timed runs
(after one warm-up round that is not
counted). Configurations are 0.2 s apart, so spinning worker threads of the previous one (ORT and
OpenVINO spin after a run) are idle again. aicc/best is aicc's median over the best peer's (the faster of ORT and OpenVINO per model
and thread count); the last line gives the geometric mean of the ratios.
"""
import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

try:
    import onnxruntime as ort
except ImportError:  # pragma: no cover
    ort = None
try:
    import openvino as ov
except ImportError:  # pragma: no cover
    ov = None

DEFAULT_ZOO_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "zoo")
NP_TYPES = {1: np.float32, 11: np.float64, 7: np.int64, 6: np.int32, 9: np.bool_, 10: np.float16}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        model = next(l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("model name"))
        flags = next(l.split(":", 1)[1].split() for l in info.splitlines() if l.startswith("flags"))
        isa = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in flags]
        return f"{model} ({'+'.join(isa)})"
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def materialize(zoo, zoo_src, models):
    missing = [m for m in models if not os.path.exists(os.path.join(zoo, m + ".onnx"))]
    if missing:
        print(f"materializing {', '.join(missing)} into {zoo}", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(zoo_src, "materialize.py"), zoo] + missing, check=True)


def model_inputs(path, zoo_src, name):
    """The zoo's recorded inputs when present, else deterministic random data (symbolic dims = 1)."""
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    data_dir = os.path.join(zoo_src, name, "test_data_set_0")
    for i, inp in enumerate(x for x in model.graph.input if x.name not in inits):
        pb = os.path.join(data_dir, f"input_{i}.pb")
        if os.path.exists(pb):
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            feeds[inp.name] = numpy_helper.to_array(t)
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        rng = np.random.default_rng(0)
        feeds[inp.name] = rng.standard_normal(shape).astype(NP_TYPES.get(tt.elem_type, np.float32))
    return feeds


class OrtRunner:
    name = "ORT"

    def __init__(self, path, threads, feeds):
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.feeds = feeds

    def times(self, iters):
        out = []
        for _ in range(iters):
            t0 = time.perf_counter()
            self.sess.run(None, self.feeds)
            out.append((time.perf_counter() - t0) * 1e3)
        return out


class OvRunner:
    name = "OpenVINO"
    core = None
    precision = "f32"

    def __init__(self, path, threads, feeds):
        if OvRunner.core is None:
            OvRunner.core = ov.Core()
        cfg = {"INFERENCE_PRECISION_HINT": OvRunner.precision, "PERFORMANCE_HINT": "LATENCY",
               "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": str(threads)}
        self.compiled = OvRunner.core.compile_model(path, "CPU", cfg)
        self.req = self.compiled.create_infer_request()
        self.feeds = feeds

    def times(self, iters):
        out = []
        for _ in range(iters):
            t0 = time.perf_counter()
            self.req.infer(self.feeds)
            out.append((time.perf_counter() - t0) * 1e3)
        return out


class AiccRunner:
    name = "aicc"

    pin = []  # ["--pin-threads"] unless --no-pin (OpenVINO pins its threads by default)

    def __init__(self, aicc, target, threads, inputs):
        self.aicc, self.target, self.threads = aicc, target, threads
        # The peers' feeds (NAME=FILE.npy): a model with symbolic dims runs the same sizes.
        self.inputs = [a for n, f in inputs.items() for a in ("--input", f"{n}={f}")]

    def times(self, iters):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            out = f.name
        try:
            r = subprocess.run([self.aicc, "bench", self.target, "--threads", str(self.threads),
                                "--iters", str(iters), "--json", out] + self.inputs + self.pin,
                               capture_output=True, text=True,
                               timeout=1800)
            if r.returncode != 0:
                raise RuntimeError(f"aicc bench failed on {self.target}: {r.stderr.strip()[-300:]}")
            with open(out) as f:
                res = json.load(f)
            return [float(x) for x in res["times_ms"]] if "times_ms" in res else [float(res["median_ms"])]
        finally:
            if os.path.exists(out):
                os.unlink(out)


def fmt(v):
    return "n/a" if v is None else (f"{v:.3g}" if v < 10 else f"{v:.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", default="/tmp/zoo", help="materialized models (NAME.onnx)")
    ap.add_argument("--zoo-src", default=DEFAULT_ZOO_SRC, help="zoo skeletons + materialize.py")
    ap.add_argument("--models", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10, help="runs per configuration per round")
    default_aicc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "aicc")
    ap.add_argument("--aicc", default=default_aicc, help="aicc binary ('' to skip)")
    ap.add_argument("--aicc-mode", default="artifact", choices=["artifact", "jit"])
    ap.add_argument("--compile-args", default="", help="extra `aicc compile` arguments")
    ap.add_argument("--json", default="", help="write the results here")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--no-pin", action="store_true",
                    help="time aicc without --pin-threads (ORT's default; OpenVINO pins)")
    ap.add_argument("--precision", default="f32", choices=["f32", "bf16"],
                    help="bf16: aicc --precision bf16 and OpenVINO bf16 (ORT stays f32)")
    args = ap.parse_args()

    all_models = sorted(f[:-5] for f in os.listdir(args.zoo_src) if f.endswith(".onnx"))
    models = [m for m in args.models.split(",") if m] or all_models
    threads = [int(t) for t in args.threads.split(",")]
    materialize(args.zoo, args.zoo_src, models)
    use_aicc = bool(args.aicc) and os.path.exists(args.aicc)
    OvRunner.precision = args.precision
    AiccRunner.pin = [] if args.no_pin else ["--pin-threads"]
    if args.precision != "f32":
        args.compile_args = (args.compile_args + " --precision " + args.precision).strip()
    peers = [(OrtRunner, ort), (OvRunner, ov)]
    versions = [f"onnxruntime {ort.__version__}" if ort else "onnxruntime n/a",
                f"openvino {ov.__version__.split('-')[0]}" if ov else "openvino n/a"]
    print(f"# {cpu_name()}, {os.cpu_count()} CPUs; {', '.join(versions)}; "
          f"rounds={args.rounds} x iters={args.iters}; median ms; precision {args.precision}; "
          f"aicc threads {'unpinned' if args.no_pin else 'pinned (--pin-threads; OpenVINO pins by default)'}"
          + (" (aicc, OpenVINO; ONNX Runtime f32)" if args.precision != "f32" else ""), flush=True)

    cols = []
    for t in threads:
        cols += [f"{t}T ORT", f"{t}T OpenVINO", f"{t}T aicc", f"{t}T aicc/best"]
    if args.markdown:
        print("| model | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
    else:
        print(f"{'model':<20}" + "".join(f"{c:>14}" for c in cols))
    results, ratios = {}, {t: [] for t in threads}
    artifacts = tempfile.mkdtemp(prefix="aicc_bench_")
    for name in models:
        path = os.path.join(args.zoo, name + ".onnx")
        feeds = model_inputs(path, args.zoo_src, name)
        runners = {}
        for t in threads:
            for cls, mod in peers:
                if mod is not None:
                    try:  # a peer that cannot load the model (OpenVINO on some QLinear models)
                        runners[(cls.name, t)] = cls(path, t, feeds)
                    except Exception as e:
                        print(f"{cls.name} cannot load {name}: {str(e).splitlines()[0][:200]}",
                              file=sys.stderr)
        if use_aicc:
            target = path
            if args.aicc_mode == "artifact":
                target = os.path.join(artifacts, name)
                try:
                    r = subprocess.run([args.aicc, "compile", path, "-o", target] + args.compile_args.split(),
                                       capture_output=True, text=True)
                    err = r.stderr.strip()[-300:] if r.returncode != 0 else None
                except OSError as e:
                    err = str(e)
                if err is not None:
                    print(f"aicc compile failed on {name}: {err}", file=sys.stderr)
                    target = None
            if target:
                inputs = {}
                for n, v in feeds.items():
                    inputs[n] = os.path.join(artifacts, f"{name}.{len(inputs)}.npy")
                    np.save(inputs[n], v)
                for t in threads:
                    runners[("aicc", t)] = AiccRunner(args.aicc, target, t, inputs)
        times = {k: [] for k in runners}
        failed = set()
        for rnd in range(args.rounds + 1):  # round 0 warms up
            for key, runner in runners.items():
                if key in failed:
                    continue
                # Let the previous configuration's threads (ORT and OpenVINO workers spin after a
                # run) go idle, so they do not steal cycles from the next one.
                time.sleep(0.2)
                try:
                    ts = runner.times(args.iters if rnd else 2)
                except Exception as e:  # a failing configuration prints and drops out
                    print(f"{key[0]} failed on {name}: {e}", file=sys.stderr)
                    failed.add(key)
                    continue
                if rnd:
                    times[key].extend(ts)
        med = {k: (statistics.median(v) if v else None) for k, v in times.items()}
        row = []
        for t in threads:
            o, v, a = med.get(("ORT", t)), med.get(("OpenVINO", t)), med.get(("aicc", t))
            best = min([x for x in (o, v) if x is not None], default=None)
            ratio = a / best if a is not None and best else None
            if ratio is not None:
                ratios[t].append(ratio)
            row += [fmt(o), fmt(v), fmt(a), "n/a" if ratio is None else f"{ratio:.2f}"]
        if args.markdown:
            print(f"| {name} | " + " | ".join(row) + " |", flush=True)
        else:
            print(f"{name:<20}" + "".join(f"{c:>14}" for c in row), flush=True)
        results[name] = {f"{k[0]}_{k[1]}t_ms": v for k, v in med.items()}
        del runners
    shutil.rmtree(artifacts, ignore_errors=True)
    geo = {t: (math.exp(sum(map(math.log, r)) / len(r)) if r else None) for t, r in ratios.items()}
    worst = {t: (max(r) if r else None) for t, r in ratios.items()}
    summary = "; ".join(f"{t}T geomean aicc/best {fmt(geo[t])}, worst {fmt(worst[t])}" for t in threads)
    print(("\n" if args.markdown else "") + summary)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "peers": versions, "results": results,
                       "geomean": {str(t): geo[t] for t in threads}}, f, indent=2)


if __name__ == "__main__":
    main()
