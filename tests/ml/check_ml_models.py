#!/usr/bin/env python3
"""Runs every scikit-learn model under tests/ml/models (written by make_sklearn_models.py) through
`aicc run` with each engine given (the artifact: `aicc compile` first) and compares with the stored ONNX Runtime outputs: element type
and shape first, then labels (integers, strings) exactly and scores with rtol 1e-4, atol 1e-5.
A ZipMap output (a sequence of maps) is compared map by map: same keys, values as scores.
Then a few nodes with bad attributes must fail with an error naming the node and the reason.
Any model that fails to import, run or match fails the check (exit 1), named in the output.
Through the JIT and the ahead-of-time artifact (`aicc compile`, its batch symbolic: each row
computed alone) every node must run compiled but those on strings or maps (ZipMap,
DictVectorizer, string labels and categories: no numeric kernel to generate; in an artifact
whose input is strings, also the values sized by its batch: a dim of a dynamic input, which the
runtime does not read); another fallback fails the model, and the summary counts the models that
run fully compiled.

    check_ml_models.py AICC [MODELS_DIR] [--engine interp --engine jit --engine artifact] [--jobs N]
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
                vals = [v for t in m.values.tensor_values for v in numpy_helper.to_array(t).reshape(-1)]
                if len(vals) != len(keys):
                    raise ValueError(f"{path}: a map of {len(keys)} keys has {len(vals)} values")
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
        stderr = ""
        if engine == "artifact":  # compiled ahead of time as `aicc compile` does, then run
            art = os.path.join(tmp, "artifact")
            r = subprocess.run([aicc, "compile", model, "-o", art], capture_output=True, text=True,
                               timeout=300)
            if r.returncode != 0:
                return name, engine, False, None, "aicc compile failed: " + \
                    (r.stderr.strip().splitlines() or ["?"])[-1]
            stderr = r.stderr
            cmd = [aicc, "run", art, "--inputs-dir", ds, "--output-dir", tmp]
        else:
            cmd = [aicc, "run", model, "--inputs-dir", ds, "--output-dir", tmp, "--engine", engine]
        if engine == "jit":
            cmd.append("--engine-stats")
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
        # (--engine-stats: "  fallback: node ... : <why>" per node that ran its reference kernel;
        # aicc compile: a note per fallback task)
        falls = [l.strip() for l in (r.stderr + stderr).splitlines()
                 if l.strip().startswith("fallback: ") or "runs through the reference kernel" in l]
        # An artifact of a model whose input is strings: its batch is a dim of that input, which
        # the runtime does not read (a dynamic value), so values sized by it have no static size.
        string_input = engine == "artifact" and any(
            i.type.tensor_type.elem_type == onnx.TensorProto.STRING
            for i in onnx.load(model, load_external_data=False).graph.input)
        for f in falls:
            if "strings are not compiled" not in f and "map<" not in f and \
                    not (string_input and "no static size" in f):
                return name, engine, False, worst, "a numeric fallback: " + f
        note = ("[compiled]" if not falls else
                f"[{len(falls)} fallback(s) on strings or maps" +
                (", and values sized by the string input]" if string_input else "]")) \
            if engine != "interp" else ""
        return name, engine, True, worst, note


def bad_models():
    """(name, model, input, expected message part): ai.onnx.ml nodes with bad attributes, which
    must fail with an error naming the node and the reason (exit 1, not a crash)."""
    from onnx import helper, TensorProto as TP

    def model(op, attrs, n_out=1, in_type=TP.FLOAT, shape=(2, 3)):
        x = helper.make_tensor_value_info("X", in_type, list(shape))
        outs = [helper.make_tensor_value_info(f"Y{i}", TP.UNDEFINED, None) for i in range(n_out)]
        node = helper.make_node(op, ["X"], [o.name for o in outs], name="bad_node",
                                domain="ai.onnx.ml", **attrs)
        g = helper.make_graph([node], "bad", [x], outs)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("ai.onnx.ml", 3)])

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    tree = dict(nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
                nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[1.0, 0, 0],
                nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0])
    return [
        ("linear_classifier_coefficients", model("LinearClassifier", dict(
            coefficients=[1.0] * 5, intercepts=[0.0, 0.0], classlabels_ints=[0, 1]), 2), x,
         "coefficients has 5 entries"),
        ("svm_classifier_kernel", model("SVMClassifier", dict(
            coefficients=[1.0] * 6, rho=[0.0], classlabels_ints=[0, 1], kernel_type="CUBIC"), 2), x,
         "kernel_type must be"),
        ("tree_regressor_node_id", model("TreeEnsembleRegressor", dict(
            tree, nodes_falsenodeids=[7, 0, 0], target_treeids=[0], target_nodeids=[1], target_ids=[0], target_weights=[1.0],
            n_targets=1)), x, "refers to node id 7"),
        ("tree_classifier_post_transform", model("TreeEnsembleClassifier", dict(
            tree, class_treeids=[0], class_nodeids=[1], class_ids=[0], class_weights=[1.0],
            classlabels_int64s=[0, 1], post_transform="BOGUS"), 2), x, "post_transform must be"),
        ("scaler_scale_length", model("Scaler", dict(scale=[1.0, 2.0], offset=[0.0])), x,
         "scale has 2 entries"),
        ("normalizer_norm", model("Normalizer", dict(norm="L3")), x, "norm must be"),
    ]


def run_bad(aicc, case):
    name, proto, x, expect = case
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save(proto, path)
        with open(os.path.join(tmp, "x.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "X").SerializeToString())
        r = subprocess.run([aicc, "run", path, "--input", "X=" + os.path.join(tmp, "x.pb")],
                           capture_output=True, text=True, timeout=60)
    err = r.stderr.strip()
    if r.returncode != 1:
        return False, f"exit code {r.returncode} (expected 1): {err[-200:]}"
    if "bad_node" not in err or expect not in err:
        return False, f"error does not name the node and '{expect}': {err[-300:]}"
    return True, err.splitlines()[-1] if err else ""


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("aicc")
    ap.add_argument("models", nargs="?", default=os.path.join(here, "models"))
    ap.add_argument("--engine", action="append",
                    help="interp, jit and/or artifact (aicc compile, then aicc run; default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    engines = a.engine or ["interp", "jit", "artifact"]
    folders = sorted(os.path.join(a.models, d) for d in os.listdir(a.models)
                     if os.path.exists(os.path.join(a.models, d, "model.onnx")))
    if not folders:
        print(f"FAIL: no models under {a.models}")
        return 1
    jobs = [(f, e) for f in folders for e in engines]
    failed = []
    compiled = {"jit": 0, "artifact": 0}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for name, engine, ok, err, msg in ex.map(lambda j: run_model(a.aicc, *j), jobs):
            status = "pass" if ok else "FAIL"
            errs = f"max abs error {err:.2g}" if err is not None else ""
            sep = "  " if ok else "  -- "
            print(f"{status:5} {engine:6} {name:44} {errs}" + (f"{sep}{msg}" if msg else ""), flush=True)
            if ok and msg == "[compiled]":
                compiled[engine] += 1
            if not ok:
                failed.append(f"{name} ({engine})")
    for e in ("jit", "artifact"):
        if e in engines:
            print(f"{e}: {compiled[e]} of {len(folders)} models fully compiled (the others: "
                  "strings or maps, as noted)")
    for case in bad_models():
        ok, msg = run_bad(a.aicc, case)
        print(f"{'pass' if ok else 'FAIL':5} error  {case[0]:44}  -- {msg}", flush=True)
        if not ok:
            failed.append(f"{case[0]} (error case)")
    total = len(jobs) + len(bad_models())
    print(f"total: {total}  pass: {total - len(failed)}  fail: {len(failed)}")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
