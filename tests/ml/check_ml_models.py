#!/usr/bin/env python3
"""Runs every scikit-learn model under tests/ml/models (written by make_sklearn_models.py) through
`aicc run` with each engine given and compares with the stored ONNX Runtime outputs: element type
and shape first, then labels (integers, strings) exactly and scores with rtol 1e-4, atol 1e-5.
A ZipMap output (a sequence of maps) is compared map by map: same keys, values as scores.
Any model that fails to import, run or match fails the check (exit 1), named in the output.

    check_ml_models.py AICC [MODELS_DIR] [--engine interp --engine jit] [--jobs N]
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-4, 1e-5


def load_value(path):
    """A TensorProto as an array, or a SequenceProto of maps as a list of {key: value} dicts."""
    data = open(path, "rb").read()
    seq = onnx.SequenceProto()
    try:
        seq.ParseFromString(data)
        if seq.elem_type == onnx.SequenceProto.MAP:
            out = []
            for m in seq.map_values:
                keys = [k.decode() for k in m.string_keys] if m.key_type == onnx.TensorProto.STRING \
                    else list(m.keys)
                vals = numpy_helper.to_array(m.values.tensor_values[0]) if m.values.tensor_values else []
                out.append(dict(zip(keys, vals)))
            return out
        if seq.elem_type == onnx.SequenceProto.TENSOR and seq.tensor_values:
            return [numpy_helper.to_array(t) for t in seq.tensor_values]
    except Exception:  # noqa: BLE001 - not a SequenceProto
        pass
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def compare(exp, got):
    """Returns (ok, max_abs_error, message)."""
    if isinstance(exp, list):
        if not isinstance(got, list) or len(exp) != len(got):
            return False, None, f"sequence of {len(exp)} expected, got {type(got).__name__}"
        worst = 0.0
        for i, (e, g) in enumerate(zip(exp, got)):
            if sorted(e) != sorted(g):
                return False, None, f"map {i}: keys {sorted(e)} expected, got {sorted(g)}"
            ek = np.array([e[k] for k in sorted(e)], np.float32)
            gk = np.array([g[k] for k in sorted(e)], np.float32)
            ok, err, msg = compare(ek, gk)
            if not ok:
                return False, err, f"map {i}: {msg}"
            worst = max(worst, err or 0.0)
        return True, worst, ""
    if exp.dtype != got.dtype:
        return False, None, f"dtype {exp.dtype} expected, got {got.dtype}"
    if exp.shape != got.shape:
        return False, None, f"shape {exp.shape} expected, got {got.shape}"
    if exp.dtype.kind in "OUSbiu":
        bad = np.flatnonzero(exp.reshape(-1) != got.reshape(-1))
        if len(bad):
            i = bad[0]
            return False, None, f"{len(bad)} labels differ, first at {i}: {exp.reshape(-1)[i]!r} expected, got {got.reshape(-1)[i]!r}"
        return True, 0.0, ""
    e, g = exp.astype(np.float64), got.astype(np.float64)
    err = float(np.max(np.abs(e - g))) if e.size else 0.0
    close = np.isclose(g, e, rtol=RTOL, atol=ATOL, equal_nan=True)
    if not close.all():
        i = int(np.flatnonzero(~close.reshape(-1))[0])
        return False, err, f"{int((~close).sum())} values differ, first at {i}: {e.reshape(-1)[i]} expected, got {g.reshape(-1)[i]} (max abs error {err:.3g})"
    return True, err, ""


def run_model(aicc, folder, engine):
    name = os.path.basename(folder)
    model = os.path.join(folder, "model.onnx")
    ds = os.path.join(folder, "test_data_set_0")
    outs = sorted(f for f in os.listdir(ds) if f.startswith("output_"))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [aicc, "run", model, "--inputs-dir", ds, "--output-dir", tmp, "--engine", engine]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return name, engine, False, None, "timeout"
        if r.returncode != 0:
            return name, engine, False, None, "aicc failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        worst = 0.0
        for i in range(len(outs)):
            got_path = os.path.join(tmp, f"output_{i}.pb")
            if not os.path.exists(got_path):
                return name, engine, False, None, f"output_{i}.pb missing"
            ok, err, msg = compare(load_value(os.path.join(ds, f"output_{i}.pb")), load_value(got_path))
            if not ok:
                return name, engine, False, err, f"output {i}: {msg}"
            worst = max(worst, err or 0.0)
        return name, engine, True, worst, ""


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("aicc")
    ap.add_argument("models", nargs="?", default=os.path.join(here, "models"))
    ap.add_argument("--engine", action="append", help="interp and/or jit (default: both)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    engines = a.engine or ["interp", "jit"]
    folders = sorted(os.path.join(a.models, d) for d in os.listdir(a.models)
                     if os.path.exists(os.path.join(a.models, d, "model.onnx")))
    if not folders:
        print(f"FAIL: no models under {a.models}")
        return 1
    jobs = [(f, e) for f in folders for e in engines]
    failed = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for name, engine, ok, err, msg in ex.map(lambda j: run_model(a.aicc, *j), jobs):
            status = "pass" if ok else "FAIL"
            errs = f"max abs error {err:.2g}" if err is not None else ""
            print(f"{status:5} {engine:6} {name:44} {errs}" + (f"  -- {msg}" if msg else ""), flush=True)
            if not ok:
                failed.append(f"{name} ({engine})")
    print(f"total: {len(jobs)}  pass: {len(jobs) - len(failed)}  fail: {len(failed)}")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
