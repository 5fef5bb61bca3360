#!/usr/bin/env python3
"""Independent checker for the ONNX backend suite: drives `aicc run --inputs-dir/--output-dir` as an
external tool would, reads the outputs with onnx's own Python package, and compares them with the
stored expected outputs the way ONNX's backend runner does (np.testing.assert_allclose with
rtol=1e-3, atol=1e-7; strings exactly; same dtype and shape). Prints per-test results and totals,
and optionally compares with a `aicc test-onnx --json` report (the two must agree).

    check_with_run.py AICC DIR... [--jobs N] [--json OUT] [--tolerances FILE] [--agree-with REPORT.json]
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def load_value(path, kind_hint=None):
    data = open(path, "rb").read()
    for cls in ([onnx.TensorProto, onnx.SequenceProto, onnx.OptionalProto] if kind_hint is None else [kind_hint]):
        p = cls()
        try:
            p.ParseFromString(data)
        except Exception:
            continue
        if cls is onnx.TensorProto:
            return numpy_helper.to_array(p)
        if cls is onnx.SequenceProto:
            return [numpy_helper.to_array(t) for t in p.tensor_values]
        if p.HasField("tensor_value"):
            return numpy_helper.to_array(p.tensor_value)
        if p.HasField("sequence_value"):
            return [numpy_helper.to_array(t) for t in p.sequence_value.tensor_values]
        return None
    raise ValueError(f"cannot parse {path}")


def proto_kind(type_proto):
    which = type_proto.WhichOneof("value")
    return {"tensor_type": onnx.TensorProto, "sequence_type": onnx.SequenceProto,
            "optional_type": onnx.OptionalProto}.get(which, onnx.TensorProto)


def read_tolerances(path):
    tol = {}
    if not path:
        return tol
    for line in open(path):
        body = line.split("#", 1)[0].split()
        if not body:
            continue
        t = {"rtol": 1e-3, "atol": 1e-7}
        for kv in body[1:]:
            k, v = kv.split("=")
            t[k] = float(v)
        tol[body[0]] = t
    return tol


def compare(expected, actual, rtol=1e-3, atol=1e-7):
    if expected is None or actual is None:
        if expected is not None or actual is not None:
            raise AssertionError("optional presence differs")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            raise AssertionError("sequence length differs")
        for e, a in zip(expected, actual):
            compare(e, a, rtol, atol)
        return
    if expected.dtype != actual.dtype:
        raise AssertionError(f"dtype {expected.dtype} expected, got {actual.dtype}")
    if expected.shape != actual.shape:
        raise AssertionError(f"shape {expected.shape} expected, got {actual.shape}")
    if expected.dtype.kind in "OUS":
        if not np.array_equal(expected, actual):
            raise AssertionError("strings differ")
        return
    if expected.dtype.kind in "biu" or expected.dtype == bool:
        np.testing.assert_array_equal(actual, expected)
        return
    np.testing.assert_allclose(actual.astype(np.float64) if actual.dtype.kind != "c" else actual,
                               expected.astype(np.float64) if expected.dtype.kind != "c" else expected,
                               rtol=rtol, atol=atol)


def collect(root):
    tests = []
    if os.path.exists(os.path.join(root, "model.onnx")):
        return [(os.path.basename(root), os.path.join(root, "model.onnx"), None)]
    for name in sorted(os.listdir(root)):
        p = os.path.join(root, name)
        if os.path.isdir(p):
            tests += collect(p)
        elif name.endswith(".onnx"):
            out = p[:-5] + "_output_0.pb"
            if os.path.exists(out):
                tests.append((name[:-5], p, out))
    return tests


def light_inputs(model_path, folder):
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    k = 0
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
        n = int(np.prod(dims)) if dims else 1
        x = (np.arange(n, dtype=np.float32) / np.float32(n)).reshape(dims)
        with open(os.path.join(folder, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, vi.name).SerializeToString())
        k += 1


def run_test(aicc, test, timeout, tol):
    name, model, light_out = test
    m = onnx.load(model, load_external_data=False)
    kinds = [proto_kind(o.type) for o in m.graph.output]
    with tempfile.TemporaryDirectory() as tmp:
        if light_out:
            sets = [(os.path.join(tmp, "in"), [light_out])]
            os.makedirs(sets[0][0])
            light_inputs(model, sets[0][0])
        else:
            d = os.path.dirname(model)
            sets = []
            for s in sorted(os.listdir(d)):
                if s.startswith("test_data_set_"):
                    sd = os.path.join(d, s)
                    outs = sorted(f for f in os.listdir(sd) if f.startswith("output_"))
                    sets.append((sd, [os.path.join(sd, f"output_{i}.pb") for i in range(len(outs))]))
        for sd, outs in sets:
            od = os.path.join(tmp, "out")
            try:
                r = subprocess.run([aicc, "run", model, "--inputs-dir", sd, "--output-dir", od],
                                   capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return name, "fail", "timeout"
            if r.returncode != 0:
                err = r.stderr.strip()
                return name, ("unsupported" if "unsupported" in err else "fail"), err
            for i, exp_path in enumerate(outs):
                got_path = os.path.join(od, f"output_{i}.pb")
                if not os.path.exists(got_path):
                    return name, "fail", f"output_{i}.pb missing"
                try:
                    compare(load_value(exp_path, kinds[i]), load_value(got_path, kinds[i]), **tol.get(name, {}))
                except AssertionError as e:
                    return name, "fail", f"output {i}: {str(e).strip().splitlines()[0] if str(e).strip() else 'mismatch'}"
    return name, "pass", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aicc")
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json")
    ap.add_argument("--tolerances", help="per-test tolerance overrides (tests/onnx/tolerances.txt)")
    ap.add_argument("--agree-with", help="aicc test-onnx --json report to compare with")
    a = ap.parse_args()
    tests = [t for d in a.dirs for t in collect(d)]
    results = {}
    tol = read_tolerances(a.tolerances)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for name, status, reason in ex.map(lambda t: run_test(a.aicc, t, a.timeout, tol), tests):
            results[name] = (status, reason)
            print(f"{status:<12} {name}" + (f"  -- {reason}" if reason and status != "pass" else ""), flush=True)
    counts = {s: sum(1 for v in results.values() if v[0] == s) for s in ("pass", "fail", "unsupported")}
    print(f"total: {len(results)}  pass: {counts['pass']}  fail: {counts['fail']}  unsupported: {counts['unsupported']}")
    if a.json:
        json.dump({"counts": counts, "tests": {k: v[0] for k, v in results.items()}}, open(a.json, "w"), indent=1)
    if a.agree_with:
        report = json.load(open(a.agree_with))
        other = {t["name"]: t["status"] == "pass" for t in report["tests"]}
        # (A test whose expected output is one random draw may pass by chance in either run:
        # expected_failures.txt marks them "random:", and test-onnx --expect-failures allows it.)
        random = set()
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected_failures.txt")) as f:
            for line in f:
                name, _, why = line.partition("#")
                if why.strip().startswith("random:"):
                    random.add(name.strip())
        diff = sorted(n for n in results if n not in random and
                      (results[n][0] == "pass") != other.get(n, False))
        for n in diff:
            print(f"DISAGREE {n}: run-checker {results[n][0]}, test-onnx {'pass' if other.get(n) else 'not pass'}")
        print(f"agreement: {len(results) - len(diff)}/{len(results)}")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
