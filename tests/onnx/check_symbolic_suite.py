"""The ONNX backend node tests with their inputs' dims made symbolic (issue #12): every dim of 2 or
more of every graph input becomes a symbol (equal sizes share one: `d7` for every 7) with the range
V..V+3, so each run is smaller than the plan's bound; the test is compiled as `aicc compile` does
and its artifact run on the test's inputs must give the expected outputs (rtol 1e-3, atol 1e-4;
exact for integers and bools; sequences and optionals element by element), or the compile must
refuse it. This exercises every lowering that takes the run's sizes (LowerOptions::runDim), the
per-sample rules, the fallback tasks that run at the run's sizes (nodes no lowering takes with
symbols) and the data-dependent dims (passes/data_dims.h) on many ops and shapes. The tests no
engine matches (expected_failures.txt: random draws) are skipped, saying so.

It also counts the matched tests whose artifact has no fallback task (every node compiled for
the symbolic sizes); -v lists the others with their first fallback's reason.

usage: check_symbolic_suite.py AICC NODE_DIR [--every N] [-v] (N: every Nth test, for CI time)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

AICC, ROOT = sys.argv[1], sys.argv[2]
EVERY = int(sys.argv[sys.argv.index("--every") + 1]) if "--every" in sys.argv else 1
if not os.path.isdir(ROOT):
    print(f"skip: no ONNX backend node tests at {ROOT}")
    sys.exit(77)


def load(path, typ):
    """An output file as the model's output type says: a tensor, a sequence (a list) or an
    optional (None or its value)."""
    if typ.HasField("sequence_type") or typ.HasField("optional_type"):
        p = onnx.SequenceProto() if typ.HasField("sequence_type") else onnx.OptionalProto()
        with open(path, "rb") as f:
            p.ParseFromString(f.read())
        return (numpy_helper.to_list(p) if typ.HasField("sequence_type")
                else numpy_helper.to_optional(p))
    return numpy_helper.to_array(onnx.load_tensor(path))


def same(f, want, got):
    """"" when got is want (tensors: shape, then values within the tolerance), else why not."""
    if want is None or got is None:
        return "" if want is None and got is None else f"{f}: {got!r:.40}, expected {want!r:.40}"
    if isinstance(want, list) != isinstance(got, list):
        return f"{f}: a {type(got).__name__}, expected a {type(want).__name__}"
    if isinstance(want, list):
        if len(want) != len(got):
            return f"{f}: {len(got)} elements, expected {len(want)}"
        return next((w for w in (same(f, a, b) for a, b in zip(want, got)) if w), "")
    if want.shape != got.shape:
        return f"{f}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind == "V":  # bfloat16, float8 (ml_dtypes)
        want, got = want.astype(np.float32), got.astype(np.float32)
    ok = (np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-4,
                      equal_nan=True) if want.dtype.kind in "fc" else np.array_equal(got, want))
    return "" if ok else f"{f}: values differ"


def outputs_match(ds, od, types):
    for f in sorted(x for x in os.listdir(ds) if x.startswith("output_")):
        typ = types[int(f[len("output_"):-len(".pb")])]
        path = os.path.join(od, f)
        if not os.path.isfile(path):
            return f"{f} missing"
        why = same(f, load(os.path.join(ds, f), typ), load(path, typ))
        if why:
            return why
    return ""


# The tests no engine can match (tests/onnx/expected_failures.txt: Bernoulli's draws, ...).
EXPECTED = {}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected_failures.txt")) as f:
    for line in f:
        name, _, why = line.partition("#")
        if name.strip():
            EXPECTED[name.strip()] = why.strip()

counts = {"matched": 0, "refused": 0, "not symbolic": 0, "expected failures": 0}
wrong, fallback_tests, refused = [], [], []
with tempfile.TemporaryDirectory() as tmp:
    for k, name in enumerate(sorted(os.listdir(ROOT))):
        d = os.path.join(ROOT, name)
        ds = os.path.join(d, "test_data_set_0")
        if k % EVERY or not name.startswith("test_") or not os.path.isdir(ds):
            continue
        if name in EXPECTED:
            print(f"skip: {name}: an expected failure of every engine ({EXPECTED[name]})")
            counts["expected failures"] += 1
            continue
        m = onnx.load(os.path.join(d, "model.onnx"))
        inits = {t.name for t in m.graph.initializer}
        sizes = set()
        for i in m.graph.input:
            if i.name in inits or not i.type.HasField("tensor_type"):
                continue
            for dim in i.type.tensor_type.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value >= 2:
                    sizes.add(dim.dim_value)
                    v = dim.dim_value
                    dim.ClearField("dim_value")
                    dim.dim_param = f"d{v}"
        if not sizes:
            counts["not symbolic"] += 1
            continue
        for o in m.graph.output:  # the declared output shapes name the old sizes
            if o.type.HasField("tensor_type"):
                o.type.tensor_type.ClearField("shape")
        del m.graph.value_info[:]
        model, art, od = (os.path.join(tmp, name + x) for x in (".onnx", "_art", "_out"))
        onnx.save(m, model)
        ranges = sum((["--dim", f"d{v}={v}..{v + 3}"] for v in sorted(sizes)), [])
        c = subprocess.run([AICC, "compile", model, "-o", art] + ranges, capture_output=True,
                           text=True)
        if c.returncode:
            counts["refused"] += 1
            refused.append(f"{name}: {(c.stderr.strip().splitlines() or ['?'])[-1][:300]}")
            continue
        # (a note per node left to its reference kernel: "runs through the reference kernel")
        falls = [l.split("(no lowering): ", 1)[-1] for l in c.stderr.splitlines()
                 if "runs through the reference kernel" in l]
        r = subprocess.run([AICC, "run", art, "--inputs-dir", ds, "--output-dir", od],
                           capture_output=True, text=True)
        why = ((r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
               if r.returncode else outputs_match(ds, od, [o.type for o in m.graph.output]))
        if why:
            wrong.append(f"{name}: {why[:200]}")
        else:
            counts["matched"] += 1
            if falls:
                fallback_tests.append(f"{name}: {falls[0][:400]}")
print(f"symbolic inputs, every {EVERY} test(s): {counts}, wrong {len(wrong)}")
print(f"matched fully compiled: {counts['matched'] - len(fallback_tests)} of {counts['matched']}"
      f" ({len(fallback_tests)} with a fallback task at the run's sizes; -v lists them)")
if "-v" in sys.argv:
    for f in fallback_tests:
        print("FALLBACK:", f)
for w in refused:
    print("REFUSED:", w)
for w in wrong:
    print("WRONG:", w)
sys.exit(1 if wrong or refused or not counts["matched"] else 0)
