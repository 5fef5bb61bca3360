#!/usr/bin/env python3
"""Runs each model with `aicc run -O0` (the reference interpreter) and `-OX [--engine E]` on its
test_data_set_0 and compares the outputs elementwise (np.isclose with rtol and atol + 5e-7 max|ref|
per output), printing max |diff|, the output range and the number of elements outside the
tolerance. Models: every folder with model.onnx + test_data_set_0 under the
given roots, and zoo-style NAME.onnx files whose test data lives in ZOO_DATA/NAME/test_data_set_0.

    compare_opt_levels.py AICC [-O 3] [--engine interp|jit] [--only NAME,...] [--rtol 1e-4] [--atol 1e-5] [--zoo DIR_WITH_MATERIALIZED_ONNX]
                          [--zoo-data ../shared/zoo] [--determinism 1,2,3] [MODELS_ROOT...]

--determinism (artifact engine): the compiled folder is run again with AICC_NUM_THREADS set to each
of the given counts (the first one twice) and every output file must be byte-identical to the first
run's: the same inputs give the same bits on every run and thread count.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def run(aicc, model, inputs, level, out, engine="interp"):
    if engine == "artifact":  # aicc compile (AOT .so) for the inputs' shapes, then run the folder
        dims = []
        m = onnx.load(model, load_external_data=False)
        for i, inp in enumerate(m.graph.input):
            pb = os.path.join(inputs, f"input_{i}.pb")
            if not os.path.exists(pb):
                continue
            t = onnx.TensorProto()
            t.ParseFromString(open(pb, "rb").read())
            shape = inp.type.tensor_type.shape.dim
            if any(not d.dim_param and not d.dim_value for d in shape):  # unnamed dims
                dims += ["--shape", f"{inp.name}=" + ",".join(str(n) for n in t.dims)]
            for d, n in zip(shape, t.dims):
                if d.dim_param:
                    dims += ["--dim", f"{d.dim_param}={n}"]
        art = out + ".artifact"
        subprocess.run([aicc, "compile", model, "-o", art, f"-O{level}"] + dims, check=True,
                       capture_output=True, text=True)
        model = art
        engine = "interp"  # ignored for artifacts
    subprocess.run([aicc, "run", model, f"-O{level}", "--engine", engine, "--inputs-dir", inputs,
                    "--output-dir", out], check=True, capture_output=True, text=True)
    return load_outputs(out)


def load_outputs(out):
    """The arrays of out/output_<i>.pb, in order."""
    outs = []
    i = 0
    while os.path.exists(os.path.join(out, f"output_{i}.pb")):
        t = onnx.TensorProto()
        t.ParseFromString(open(os.path.join(out, f"output_{i}.pb"), "rb").read())
        outs.append(numpy_helper.to_array(t))
        i += 1
    return outs


def compare(ref, got, rtol, atol):
    """(error or None, table row): count, dtype and shape first, then values within rtol/atol."""
    mismatch = [f"output {i}: {g.dtype}{list(g.shape)}, expected {r.dtype}{list(r.shape)}"
                for i, (r, g) in enumerate(zip(ref, got)) if r.dtype != g.dtype or r.shape != g.shape]
    if len(ref) != len(got) or mismatch:  # before values: np.isclose would broadcast
        return f"{len(got)} outputs, expected {len(ref)}; {'; '.join(mismatch)}", ""
    diff = scale = worst = 0.0  # worst: max |diff| / (atol' + rtol |ref|); > 1 is outside
    outside = 0
    for r, g in zip(ref, got):
        if r.dtype.kind == "f":
            diff = max(diff, float(np.max(np.abs(r.astype(np.float64) - g))) if r.size else 0.0)
            fin_r = np.abs(r[np.isfinite(r)])
            out_scale = float(np.max(fin_r)) if fin_r.size else 0.0
            scale = max(scale, float(np.max(np.abs(r))) if r.size else 0.0)
            # An output near zero computed through values of size max|ref| carries the rounding
            # of those (f32 sums in another order, e.g. AVX-512 vs AVX2 GEMM tiles): the absolute
            # floor grows by 4 ulp of the output's largest value (resnet50's random-weight logits
            # reach 1.2e3; one logit near 1 differs by 3.4e-4 between the two tile orders).
            tol_abs = atol + 5e-7 * out_scale
            outside += int(np.sum(~np.isclose(g, r, rtol=rtol, atol=tol_abs, equal_nan=True)))
            fin = np.isfinite(r) & np.isfinite(g)
            if fin.any():
                d = np.abs(r[fin].astype(np.float64) - g[fin])
                worst = max(worst, float(np.max(d / (tol_abs + rtol * np.abs(r[fin].astype(np.float64))))))
        else:
            outside += int(np.sum(r != g))
    row = f"{len(ref):>7} {diff:>11.3g} {scale:>10.3g} {outside:>8} {worst:>7.3g}"
    return (f"{outside} elements outside the tolerance: {row}" if outside else None), row


def output_bytes(aicc, folder, inputs, out, threads):
    env = dict(os.environ, AICC_NUM_THREADS=str(threads))
    subprocess.run([aicc, "run", folder, "--inputs-dir", inputs, "--output-dir", out], check=True,
                   capture_output=True, text=True, env=env)
    return [open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out))]


def read_outputs(out):
    """output_<i>.pb files as (dtype, shape, bytes), in order."""
    return [(a.dtype.str, a.shape, a.tobytes()) for a in load_outputs(out)]


def runtime_differs(aicc, runner, folder, inputs, tmp):
    """Why aicc-run's outputs of the compiled folder differ from `aicc run`'s (bit for bit, one
    thread), or None when they are equal."""
    env = dict(os.environ, AICC_NUM_THREADS="1")
    ref, got = os.path.join(tmp, "rt_ref"), os.path.join(tmp, "rt_got")
    subprocess.run([aicc, "run", folder, "--inputs-dir", inputs, "--output-dir", ref], check=True,
                   capture_output=True, text=True, env=env)
    subprocess.run([runner, "run", folder, "--inputs-dir", inputs, "--output-dir", got], check=True,
                   capture_output=True, text=True, env=env)
    a, b = read_outputs(ref), read_outputs(got)
    if len(a) != len(b):
        return f"aicc-run wrote {len(b)} outputs, aicc run {len(a)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if x[:2] != y[:2]:
            return f"output {i}: aicc-run gives {y[0]} {y[1]}, aicc run {x[0]} {x[1]}"
        if x[2] != y[2]:
            return f"output {i}: aicc-run's values differ from aicc run's (bitwise, 1 thread)"
    return None


def nondeterministic(aicc, folder, inputs, tmp, counts):
    """The thread counts whose run of the compiled folder differs from the first run, bitwise."""
    first = output_bytes(aicc, folder, inputs, os.path.join(tmp, "d0"), counts[0])
    bad = []
    for k, n in enumerate([counts[0]] + counts):
        if output_bytes(aicc, folder, inputs, os.path.join(tmp, f"d{k + 1}"), n) != first:
            bad.append(n)
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aicc")
    ap.add_argument("roots", nargs="*")
    ap.add_argument("-O", dest="level", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--engine", default="interp",
                    help="engine(s) of the -OX run, comma-separated (interp, jit, artifact); -O0 runs once")
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--zoo", help="folder with materialized zoo models (materialize.py output)")
    ap.add_argument("--zoo-data", default=os.path.join(os.path.dirname(__file__), "../../../shared/zoo"))
    ap.add_argument("--determinism", default="", help="artifact engine: thread counts that must give identical bits")
    ap.add_argument("--rt-runner", help="artifact engine: aicc-run, whose outputs must equal `aicc run DIR`'s bit for bit")
    a = ap.parse_args()
    counts = [int(n) for n in a.determinism.split(",") if n]
    if counts and "artifact" not in a.engine.split(","):
        ap.error("--determinism needs the artifact engine")
    cases = []
    for root in a.roots:
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if os.path.exists(os.path.join(d, "model.onnx")) and os.path.isdir(os.path.join(d, "test_data_set_0")):
                cases.append((name, os.path.join(d, "model.onnx"), os.path.join(d, "test_data_set_0")))
    if a.zoo:
        for f in sorted(os.listdir(a.zoo)):
            if f.endswith(".onnx"):
                name = f[:-5]
                data = os.path.join(a.zoo_data, name, "test_data_set_0")
                if os.path.isdir(data):
                    cases.append((name, os.path.join(a.zoo, f), data))
    if a.only:
        keep = set(a.only.split(","))
        missing = keep - {c[0] for c in cases}
        if missing:
            print(f"ERROR: listed models not found: {', '.join(sorted(missing))}")
            return 1
        cases = [c for c in cases if c[0] in keep]
    engines = a.engine.split(",")
    bad = 0
    print(f"{'model':<28} {'engine':<8} {'outputs':>7} {'max|diff|':>11} {'max|ref|':>10} {'outside':>8} {'worst':>7}")
    for name, model, data in cases:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                ref = run(a.aicc, model, data, 0, os.path.join(tmp, "o0"))  # once for all engines
            except subprocess.CalledProcessError as e:
                print(f"{name:<28} ERROR -O0: {e.stderr.strip()}")
                bad += len(engines)
                continue
            for engine in engines:
                out = os.path.join(tmp, "o" + engine)
                try:
                    got = run(a.aicc, model, data, a.level, out, engine)
                    varies = nondeterministic(a.aicc, out + ".artifact", data, tmp, counts) \
                        if counts and engine == "artifact" else []
                    rt_error = runtime_differs(a.aicc, a.rt_runner, out + ".artifact", data, tmp) \
                        if a.rt_runner and engine == "artifact" else None
                except subprocess.CalledProcessError as e:
                    print(f"{name:<28} {engine:<8} ERROR {e.stderr.strip()}")
                    bad += 1
                    continue
                if rt_error:
                    print(f"{name:<28} {engine:<8} ERROR {rt_error}")
                    bad += 1
                    continue
                if varies:
                    print(f"{name:<28} {engine:<8} ERROR outputs differ bitwise between runs "
                          f"(AICC_NUM_THREADS={varies} vs {counts[0]})")
                    bad += 1
                    continue
                error, row = compare(ref, got, a.rtol, a.atol)
                bad += error is not None
                print(f"{name:<28} {engine:<8} " + (f"ERROR {error}" if error else row))
    total = len(cases) * len(engines)
    print(f"{total - bad}/{total} model runs match -O0 at -O{a.level} --engine {a.engine} "
          f"(rtol {a.rtol}, atol {a.atol})" + (f", artifacts bit-identical with {counts} threads" if counts else "")
          + (", aicc-run bit-identical to aicc run" if a.rt_runner else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
