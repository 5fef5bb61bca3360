"""Dynamic shapes (issue #12), one artifact per model against the reference interpreter:
- every zoo model with its batch dim renamed to the symbol N, and every shared model whose inputs'
  only symbolic dim is a leading batch, at batch 1, 2, 3 (and past the bound: refused in one line);
  exports that fix the batch inside the graph (a Reshape to [1, ...]) cannot run other batches
  anywhere (the interpreter and ONNX Runtime refuse them too): the compile fixes the symbol at the
  one value the Reshape holds, naming the node, and the artifact refuses other batches by its input
  checks (shufflenet_v2, bert_like_encoder); bert_like_encoder with its sequence length symbolic (its
  export baked 128 into Reshape shapes, rewritten to -1 here) at lengths 1, 17, 128;
- the zoo CNNs with N, H and W symbolic at three image sizes; --specialize (the variant runs at its
  size, the dynamic plan elsewhere); every shared model compiles with no --dim or --shape and no
  fallback (the two that cannot: skipped with the reason); ppocrv4-det (its shapes agree only for
  multiples of 32: found and enforced), ppocrv4-rec, oww-melspectrogram and silero-vad (both If
  branches) at three sizes each;
- resnet18's int8 and bf16 dynamic artifacts bit for bit the fixed-size ones at batch 1 and 3.

usage: check_dynamic_shapes.py AICC ZOO_DIR SHARED_ZOO_DIR [SHARED_MODELS_DIR] [--quick]
(the materialized zoo models; their references in ../shared/zoo; ../shared/models)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from symbolic_zoo import length_symbolic, renamed  # noqa: E402

ARGS = [a for a in sys.argv[1:] if a != "--quick"]
AICC, ZOO, REFS = ARGS[0], ARGS[1], ARGS[2]
SHARED = ARGS[3] if len(ARGS) > 3 else ""
# --quick (sanitizer builds, several times slower): the zoo's two smallest models for the batch,
# mobilenet_v3_small for image sizes and --specialize, the shared models in full, no int8 / bf16.
QUICK = "--quick" in sys.argv
ZOO_QUICK = {"mlp", "mobilenet_v3_small"}
SIZES = [1, 2, 3]
BOUND = 4
if not os.path.isdir(ZOO):
    print(f"skip: no zoo models in {ZOO} (scripts/test.sh materializes them)")
    sys.exit(77)


def run(*args):
    return subprocess.run([AICC, *args], capture_output=True, text=True)


def batch_only(model):
    """Whether every input's only symbolic dim is its leading one (a batch)."""
    m = onnx.load(model, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    dims = [list(i.type.tensor_type.shape.dim) for i in ins]
    return bool(ins) and all(len(d) >= 2 and d[0].dim_param and
                             all(x.HasField("dim_value") for x in d[1:]) for d in dims)


failures, checked = [], 0


def record(label, ok, detail):
    """One checked output: printed, and a failure when not ok."""
    global checked
    print(f"{label}: {detail} {'ok' if ok else 'MISMATCH'}")
    checked += 1
    if not ok:
        failures.append(f"{label}: {detail}")


# (name, model, references, a copy to remove after, the symbolic axis, its sizes, --dim range)
cases = []
for name in sorted(f[:-5] for f in os.listdir(ZOO) if f.endswith(".onnx") and not f.startswith(".")
                   and (not QUICK or f[:-5] in ZOO_QUICK)):
    # Next to the original, so its external weights resolve.
    copy = os.path.join(ZOO, f".{name}.batchN.onnx")
    onnx.save(renamed(os.path.join(ZOO, name + ".onnx"), [(0, "N")]), copy)
    cases.append((name, copy, os.path.join(REFS, name, "test_data_set_0"), copy, 0, SIZES,
                  f"N=1..{BOUND}"))
    if name == "bert_like_encoder":
        copy = os.path.join(ZOO, f".{name}.seqS.onnx")
        onnx.save(length_symbolic(os.path.join(ZOO, name + ".onnx")), copy)
        cases.append((name + " (length S)", copy, os.path.join(REFS, name, "test_data_set_0"), copy,
                      1, [1, 17, 128], "S=1..128"))
for name in sorted(os.listdir(SHARED)) if SHARED and os.path.isdir(SHARED) else []:
    model = os.path.join(SHARED, name, "model.onnx")
    refs = os.path.join(SHARED, name, "test_data_set_0")
    if os.path.isfile(model) and os.path.isdir(refs) and batch_only(model):
        sym = onnx.load(model, load_external_data=False).graph.input[0].type.tensor_type.shape.dim[0].dim_param
        cases.append((name, model, refs, None, 0, SIZES, f"{sym}=1..{BOUND}"))
with tempfile.TemporaryDirectory() as tmp:
    for name, model, ref, copy, axis, sizes, dim in cases:
        try:
            inputs = sorted(f for f in os.listdir(ref) if f.startswith("input_"))
            base = [numpy_helper.to_array(onnx.load_tensor(os.path.join(ref, f))) for f in inputs]
            art = os.path.join(tmp, name.replace(" ", "_"))
            c = run("compile", model, "-o", art, "--dim", dim)
            rng = np.random.default_rng(0)

            def inputs_for(b):
                ins = os.path.join(tmp, f"{name}_in{b}".replace(" ", "_"))
                os.makedirs(ins, exist_ok=True)
                for f, x in zip(inputs, base):
                    if axis:  # a length: the reference's first b positions, cyclically
                        t = numpy_helper.from_array(np.ascontiguousarray(
                            np.take(x, np.arange(b) % x.shape[axis], axis=axis)))
                        onnx.save_tensor(t, os.path.join(ins, f))
                        continue
                    one = x[:1]
                    if np.issubdtype(x.dtype, np.floating):
                        xs = [one * (1 + 0.25 * i) + rng.normal(0, 0.1, one.shape) for i in range(b)]
                    else:
                        xs = [np.roll(one, i) for i in range(b)]
                    t = numpy_helper.from_array(np.concatenate(xs).astype(x.dtype))
                    onnx.save_tensor(t, os.path.join(ins, f))
                return ins

            def outputs(what, ins, tag):
                od = os.path.join(tmp, f"{name}_{tag}".replace(" ", "_"))
                r = run("run", what, "--inputs-dir", ins, "--output-dir", od)
                if r.returncode:
                    return r.stderr.strip().splitlines()[-1]
                return [numpy_helper.to_array(onnx.load_tensor(os.path.join(od, f)))
                        for f in sorted(os.listdir(od))]

            if c.returncode:
                # Refused: right only where the model itself cannot take another batch.
                interp = outputs(model, inputs_for(2), "interp2")
                if isinstance(interp, str) and "--dim" in c.stderr:
                    print(f"skip: {name}: its export fixes the batch (the interpreter at batch 2: "
                          f"{interp[:160]}); the compile refuses N, naming the node: "
                          f"{c.stderr.strip().splitlines()[-1][:200]}")
                else:
                    failures.append(f"{name}: compile failed: {c.stderr.strip()[-400:]}")
                continue
            # An export that bakes the batch into a Reshape's shape holds N at one value: the
            # compile fixes it there (saying so), and the artifact refuses other batches by its
            # input checks, as the interpreter (and ONNX Runtime) refuse them at that Reshape.
            pinned = f"symbolic dim {dim.split('=')[0]}: fixed at 1: node" in c.stdout  # (Reshape named)
            if pinned:
                print(f"{name}: {c.stdout.splitlines()[0][:200]}")
            if axis == 0:  # past the bound: status 1, one line naming the input and the dim
                r = run("run", art, "--inputs-dir", inputs_for(BOUND + 1), "--output-dir",
                        os.path.join(tmp, "past_bound"))
                msg = r.stderr.strip()
                want_msg = (f"dim 0 is {BOUND + 1}, the model was compiled for 1" if pinned else
                            f"dim 0 ({dim.split('=')[0]}) is {BOUND + 1}, outside the range 1..{BOUND}")
                record(f"{name} batch {BOUND + 1}",
                       r.returncode == 1 and "\n" not in msg and want_msg in msg,
                       f"refused: status {r.returncode}, '{msg[:160]}'")
            for b in sizes:
                ins = inputs_for(b)
                want, got = outputs(model, ins, f"interp{b}"), outputs(art, ins, f"artifact{b}")
                if pinned and isinstance(want, str) and isinstance(got, str):
                    record(f"{name} size {b}", f"dim 0 is {b}, the model was compiled for 1" in got,
                           f"refused by the input checks ({got[:120]}), as the interpreter "
                           f"refuses it ({want[:120]})")
                    continue
                if isinstance(want, str) and isinstance(got, str) and want.split(":")[:3] == got.split(":")[:3]:
                    # An export that fixes the batch inside (Reshape shapes): the interpreter
                    # (and ONNX Runtime) refuse this batch, and so does the artifact, naming the
                    # same node (the node runs on its reference kernel at the run's sizes).
                    record(f"{name} size {b}", True, f"refused as the interpreter does: {got[:160]}")
                    continue
                if isinstance(want, str) or isinstance(got, str):
                    failures.append(f"{name} size {b}: interpreter: {want if isinstance(want, str) else 'ok'}; "
                                    f"artifact: {got if isinstance(got, str) else 'ok'}")
                    continue
                for k, (g, w) in enumerate(zip(got, want)):
                    err = float(np.abs(g.astype(np.float64) - w).max()) if w.size else 0.0
                    scale = float(np.abs(w).max()) if w.size else 0.0
                    record(f"{name} size {b} output {k}",
                           g.shape == w.shape and err <= 1e-4 * max(1.0, scale),
                           f"shape {g.shape} (interpreter {w.shape}) max|diff| {err:.3g} "
                           f"(max|y| {scale:.3g})")
        finally:
            if copy:
                os.remove(copy)

    # Image and audio sizes: the zoo CNNs with N, H and W symbolic (random images), and the shared
    # models with every symbolic dim as exported (their reference input tiled): ppocrv4-det (its
    # shapes agree only for multiples of 32, which the compile finds and the artifact enforces),
    # ppocrv4-rec and oww-melspectrogram, at three sizes each against the interpreter.
    def spatial(model, out_path):
        m = renamed(model, [(0, "N")])
        for v in m.graph.input:
            for k, sym in ((2, "H"), (3, "W")):
                d = v.type.tensor_type.shape.dim[k]
                d.ClearField("dim_value")
                d.dim_param = sym
        onnx.save(m, out_path)

    def sizes_case(name, model, shapes, dims, refuse=None, base=None, others=(),
                   runtime_alone=False):
        """One artifact at each shape of input 0, against the interpreter: random, or (base) the
        reference input tiled to each shape (its batch scaled); `others`: the model's other
        inputs as they are. runtime_alone: aicc-run (the runtime without the interpreter, which
        refuses a fallback task) gives the same bytes as `aicc run`."""
        art = os.path.join(tmp, f"{name}_sized")
        c = run("compile", model, "-o", art, *sum((["--dim", d] for d in dims), []))
        if c.returncode:
            failures.append(f"{name} (sizes): compile failed: {c.stderr.strip()[-400:]}")
            return
        rng = np.random.default_rng(1)
        for shape in shapes + ([refuse] if refuse else []):
            tag = "x".join(map(str, shape))
            ins = os.path.join(tmp, f"{name}_in{tag}")
            os.makedirs(ins, exist_ok=True)
            x = rng.normal(0, 1, shape).astype(np.float32)
            if base is not None:
                x = base[:1]
                for axis in range(1, len(shape)):
                    x = np.take(x, np.arange(shape[axis]) % base.shape[axis], axis=axis)
                x = np.concatenate([x * (1 - 0.1 * i) for i in range(shape[0])]).astype(np.float32)
            onnx.save_tensor(numpy_helper.from_array(x), os.path.join(ins, "input_0.pb"))
            for k, other in enumerate(others(shape) if callable(others) else others, 1):
                onnx.save_tensor(numpy_helper.from_array(other), os.path.join(ins, f"input_{k}.pb"))
            got = []
            for what, kind in ((model, "interp"), (art, "artifact")):
                od = os.path.join(tmp, f"{name}_{kind}{tag}")
                r = run("run", what, "--inputs-dir", ins, "--output-dir", od)
                got.append(r if r.returncode else
                           [numpy_helper.to_array(onnx.load_tensor(os.path.join(od, f)))
                            for f in sorted(os.listdir(od))])
            if shape == refuse:  # not a multiple of the step: status 1, one line
                r = got[1]
                msg = r.stderr.strip() if not isinstance(r, list) else ""
                record(f"{name} {tag}", isinstance(r, subprocess.CompletedProcess) and
                       r.returncode == 1 and "\n" not in msg and "not a multiple of 32" in msg,
                       f"refused: '{msg[:160]}'")
                continue
            want, have = got
            if runtime_alone and isinstance(have, list):
                od = os.path.join(tmp, f"{name}_rt{tag}")
                r = subprocess.run([AICC + "-run", "run", art, "--inputs-dir", ins,
                                    "--output-dir", od], capture_output=True, text=True)
                alone = [] if r.returncode else [
                    numpy_helper.to_array(onnx.load_tensor(os.path.join(od, f)))
                    for f in sorted(os.listdir(od))]
                same = len(alone) == len(have) and all(
                    a.shape == h.shape and np.array_equal(a, h) for a, h in zip(alone, have))
                record(f"{name} {tag} with the runtime alone (aicc-run)", same,
                       r.stderr.strip()[-200:] if r.returncode else
                       "the bytes of aicc run's outputs" if same else "outputs differ from aicc run's")
            if not isinstance(want, list) or not isinstance(have, list):
                failures.append(f"{name} {tag}: a run failed: " + "; ".join(
                    r.stderr.strip()[-200:] for r in got if not isinstance(r, list)))
                continue
            for k, (g, wv) in enumerate(zip(have, want)):
                err = float(np.abs(g.astype(np.float64) - wv).max()) if wv.size else 0.0
                scale = float(np.abs(wv).max()) if wv.size else 0.0
                # relative to the output's size (a detector's map of small probabilities)
                record(f"{name} {tag} output {k}",
                       g.shape == wv.shape and err <= 1e-4 * max(scale, 1e-6),
                       f"shape {g.shape} (interpreter {wv.shape}) max|diff| {err:.3g} "
                       f"(max|y| {scale:.3g})")

    def reference_input(model, k=0):
        return numpy_helper.to_array(onnx.load_tensor(os.path.join(
            os.path.dirname(model), "test_data_set_0", f"input_{k}.pb")))

    IMAGE_SIZES = [(1, 3, 224, 224), (2, 3, 160, 192), (1, 3, 320, 256)]
    # (shufflenet_v2 fixes its batch inside, in Reshape shapes: see above)
    # (resnet50 and densenet121 are the same layers as resnet18 and the others, slower to check)
    for name in ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
                 "squeezenet1_1"):
        if QUICK and name not in ZOO_QUICK:
            continue
        if not os.path.isfile(os.path.join(ZOO, name + ".onnx")):
            continue
        copy = os.path.join(ZOO, f".{name}.hw.onnx")
        spatial(os.path.join(ZOO, name + ".onnx"), copy)
        try:
            sizes_case(name, copy, IMAGE_SIZES, ["N=1..2", "H=32..320", "W=32..320"])
        finally:
            os.remove(copy)
    # --specialize: a dynamic artifact with a fixed-size variant at 1x3x224x224 runs the variant
    # there (its output bit for bit the fixed-size artifact's, whose blocked kernels round
    # differently from the dynamic plan's NCHW ones) and the dynamic plan elsewhere.
    name = "mobilenet_v3_small" if QUICK else "mobilenet_v2"
    if os.path.isfile(os.path.join(ZOO, name + ".onnx")):
        copy = os.path.join(ZOO, f".{name}.spec.onnx")
        spatial(os.path.join(ZOO, name + ".onnx"), copy)
        try:
            ranges = ["--dim", "N=1..2", "--dim", "H=32..320", "--dim", "W=32..320"]
            arts = {k: os.path.join(tmp, f"{name}_{k}") for k in ("spec", "dyn", "fixed")}
            cs = [run("compile", copy, "-o", arts["spec"], *ranges, "--specialize",
                      "input=1,3,224,224"),
                  run("compile", copy, "-o", arts["dyn"], *ranges),
                  run("compile", os.path.join(ZOO, name + ".onnx"), "-o", arts["fixed"])]
            if any(c.returncode for c in cs):
                failures.append(f"{name} --specialize: compile failed: "
                                + " ".join(c.stderr.strip()[-300:] for c in cs))
            else:
                outs = {}
                for shape in ((1, 3, 224, 224), (2, 3, 160, 192)):
                    ins = os.path.join(tmp, f"spec_in{shape[2]}")
                    os.makedirs(ins, exist_ok=True)
                    x = np.random.default_rng(2).normal(0, 1, shape).astype(np.float32)
                    onnx.save_tensor(numpy_helper.from_array(x), os.path.join(ins, "input_0.pb"))
                    for k in ("spec", "dyn", "fixed", "interp"):
                        if k == "fixed" and shape[2] != 224:
                            continue
                        od = os.path.join(tmp, f"spec_{k}{shape[2]}")
                        r = run("run", copy if k == "interp" else arts[k], "--inputs-dir", ins,
                                "--output-dir", od)
                        outs[k, shape[2]] = (r.stderr.strip()[-200:] if r.returncode else
                                             numpy_helper.to_array(onnx.load_tensor(
                                                 os.path.join(od, "output_0.pb"))))
                if any(isinstance(v, str) for v in outs.values()):
                    failures.append(f"{name} --specialize: a run failed: {outs}")
                else:
                    record(f"{name} --specialize at 1x3x224x224", np.array_equal(
                        outs["spec", 224], outs["fixed", 224]),
                        "the variant ran: bit for bit the fixed-size artifact "
                        f"(the dynamic plan differs by {np.abs(outs['dyn', 224] - outs['fixed', 224]).max():.3g})")
                    if np.array_equal(outs["dyn", 224], outs["fixed", 224]):
                        print("note: the dynamic plan matches the fixed one bit for bit here, so "
                              "the check above cannot tell which ran")
                    err = float(np.abs(outs["spec", 160] - outs["interp", 160]).max())
                    record(f"{name} --specialize at 2x3x160x192", np.array_equal(
                        outs["spec", 160], outs["dyn", 160]) and err <= 1e-4 * 10,
                        f"the dynamic plan ran (= the dynamic artifact), interpreter max|diff| {err:.3g}")
        finally:
            os.remove(copy)

    # Every shared model compiles as it is, with no --dim or --shape (symbolic dims at their
    # default ranges, unnamed ones named) and no fallback task, except the two the compile
    # cannot take yet: the reason printed.
    KNOWN = {"superres-prepost-customops": "onnxruntime-extensions' DecodeImage / EncodeImage "
                                           "(ONNX Runtime needs the extensions library too)",
             "silero-vad-v5": "spox's export is one If of nested Ifs on the input sizes: the "
                              "plan for the whole ranges runs it on the reference kernels, the "
                              "size classes compiled (checked below)"}
    for name in sorted(os.listdir(SHARED)) if SHARED and os.path.isdir(SHARED) else []:
        model = os.path.join(SHARED, name, "model.onnx")
        if not os.path.isfile(model):
            continue
        folder = os.path.join(tmp, f"noflags_{name}")
        c = run("compile", model, "-o", folder)
        fallbacks = (json.load(open(os.path.join(folder, "report.json")))["fallbacks"]
                     if not c.returncode else None)
        if name in KNOWN and (c.returncode or fallbacks):
            print(f"skip: {name} does not compile fully with no flags: {KNOWN[name]}: " +
                  (c.stderr.strip().splitlines()[-1][:160] if c.returncode else
                   f"{fallbacks} fallback task(s)"))
            continue
        record(f"{name} compiles with no --dim or --shape", c.returncode == 0 and fallbacks == 0,
               c.stderr.strip()[-200:] if c.returncode else f"compiled, {fallbacks} fallbacks")

    p = "p2o.DynamicDimension."
    shared = [  # (model, input shapes, --dim ranges, a shape to refuse)
        ("ppocrv4-det", [(1, 3, 320, 320), (2, 3, 160, 192), (1, 3, 96, 512)],
         [f"{p}0=1..2", f"{p}1=32..512", f"{p}2=32..512"], (1, 3, 100, 128)),
        ("ppocrv4-rec", [(1, 3, 48, 320), (2, 3, 48, 100), (1, 3, 48, 640)],
         [f"{p}0=1..2", f"{p}1=8..640"], None),  # a text line: batch and width
        ("oww-melspectrogram", [(1, 1760), (2, 4000), (1, 16000)],
         ["batch_size=1..2", "samples=400..16000"], None),  # audio: batch and length
    ]
    for name, shapes, dims, refuse in shared:
        model = os.path.join(SHARED, name, "model.onnx") if SHARED else ""
        if os.path.isfile(model):
            sizes_case(name, model, shapes, dims, refuse, reference_input(model))
    # silero-vad: its audio chunk's length symbolic, through both branches of its If on the sample
    # rate (input 1; the state, input 2, as in the reference).
    silero = os.path.join(SHARED, "silero-vad-op18-ifless", "model.onnx") if SHARED else ""
    if os.path.isfile(silero):
        state = reference_input(silero, 2)
        for rate in (16000, 8000):
            sizes_case(f"silero-vad-op18-ifless {rate // 1000} kHz", silero,
                       [(1, 256), (1, 512), (1, 960)], ["batch=1..1", "sequence=256..1024"],
                       base=reference_input(silero), others=(np.array(rate, np.int64), state))

    # silero-vad-v5 compiled with no flags (its batch, audio length and state's batch symbolic):
    # its Ifs on the sizes ("squeeze the frames axis if it is 1") split the length's range into
    # size classes (passes/size_predicates.h), each compiled with those Ifs folded; both rates,
    # batches 1 and 2, through the runtime alone too (which has no interpreter for a fallback).
    v5 = os.path.join(SHARED, "silero-vad-v5", "model.onnx") if SHARED else ""
    if os.path.isfile(v5):
        for rate in (16000, 8000):
            # (the LSTM inside takes 256 or 512 samples at 16 kHz, 256 at 8 kHz: ONNX Runtime
            # and the interpreter refuse the others)
            shapes = [(1, 256), (1, 512), (2, 512)] if rate == 16000 else [(1, 256), (3, 256)]
            state = reference_input(v5, 1)  # [2, batch, 128]
            sizes_case(f"silero-vad-v5 {rate // 1000} kHz", v5, shapes, [],
                       base=reference_input(v5), runtime_alone=True,
                       others=lambda shape, rate=rate, state=state: (
                           np.repeat(state, shape[0], axis=1), np.array(rate, np.int64)))

    # int8 and bf16: a dynamic artifact gives bit for bit the fixed-size artifact's outputs (the
    # same kernels; a batch's GEMM is one call of all its rows in both).
    name = "resnet18"
    if os.path.isfile(os.path.join(ZOO, name + ".onnx")) and not QUICK:
        copy = os.path.join(ZOO, f".{name}.batchN.onnx")
        onnx.save(renamed(os.path.join(ZOO, name + ".onnx"), [(0, "N")]), copy)
        ref = os.path.join(REFS, name, "test_data_set_0")
        x = numpy_helper.to_array(onnx.load_tensor(os.path.join(ref, "input_0.pb")))[:1]
        try:
            for prec in ("int8", "bf16"):
                for b in (1, 3):
                    # The batch, also the int8 calibration set (one for both artifacts).
                    ins = os.path.join(tmp, f"{prec}_in{b}")
                    os.makedirs(ins, exist_ok=True)
                    batch = np.concatenate([x * (1 + 0.25 * i) for i in range(b)]).astype(np.float32)
                    onnx.save_tensor(numpy_helper.from_array(batch), os.path.join(ins, "input_0.pb"))
                    extra = ["--calibration", ins] if prec == "int8" else []
                    dyn, fixed = os.path.join(tmp, f"dyn_{prec}{b}"), os.path.join(tmp, f"fixed_{prec}{b}")
                    d = run("compile", copy, "-o", dyn, "--precision", prec, "--dim", "N=1..4", *extra)
                    if d.returncode and prec == "bf16" and "AVX512-BF16" in d.stderr:
                        print(f"skip: {name} bf16: this CPU lacks AVX512-BF16 ({d.stderr.strip()[:120]})")
                        break
                    c = run("compile", copy, "-o", fixed, "--precision", prec, "--dim", f"N={b}",
                            *extra)
                    if c.returncode or d.returncode:
                        failures.append(f"{name} {prec}: compile failed: {(c.stderr + d.stderr)[-400:]}")
                        break
                    want = outputs(fixed, ins, f"{prec}_fixed{b}")
                    got = outputs(dyn, ins, f"{prec}_dyn{b}")
                    if isinstance(want, str) or isinstance(got, str):
                        failures.append(f"{name} {prec} batch {b}: a run failed: {want} / {got}")
                        continue
                    record(f"{name} {prec} batch {b}", np.array_equal(want[0], got[0]),
                           f"dynamic vs the fixed-size artifact, max|diff| "
                           f"{float(np.abs(want[0] - got[0]).max()):.3g} (bit for bit: 0)")
        finally:
            os.remove(copy)
print(f"{checked} outputs checked")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures or not checked else 0)
