"""aicc: an ahead-of-time compiler for ONNX models (docs/python.md).

    import aicc
    sess = aicc.InferenceSession("model.onnx")          # like onnxruntime.InferenceSession
    outputs = sess.run(None, {"input": x})

    compiled = aicc.compile("model.onnx", "model.aicc")  # the artifact `aicc compile` writes
    y = compiled.run({"input": x})
    same = aicc.load("model.aicc")

Errors are raised as aicc.Error (a RuntimeError) with the message the `aicc` CLI prints.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _aicc

Error = _aicc.Error
__version__ = _aicc.version()

ModelLike = Union[str, "os.PathLike[str]", bytes, Any]  # Any: an onnx.ModelProto

# ONNX Runtime's type strings for aicc's element types.
_ORT_TYPES = {
    "f32": "float", "f64": "double", "f16": "float16", "bf16": "bfloat16",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "bool": "bool", "string": "string", "c64": "complex64", "c128": "complex128",
}


@dataclass(frozen=True)
class NodeArg:
    """An input or output: name, shape (ints, symbol strings or None per dim) and type
    ("tensor(float)", as ONNX Runtime spells it)."""

    name: str
    shape: Optional[List[Union[int, str, None]]]
    type: str


def _node_args(infos) -> List[NodeArg]:
    out = []
    for name, dtype, dims in infos:
        t = "seq(tensor)" if dtype == "sequence" else f"tensor({_ORT_TYPES.get(dtype, dtype)})"
        out.append(NodeArg(name, None if dims is None else list(dims), t))
    return out


def _model_bytes(model: ModelLike) -> tuple[bytes, str]:
    """(serialized ONNX, folder for external data) from a path, bytes or onnx.ModelProto."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), os.getcwd()
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                return f.read(), os.path.dirname(os.path.abspath(path))
        except OSError as e:
            raise Error(f"cannot read model '{path}': {e.strerror}") from None
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString(), os.getcwd()
    raise TypeError(f"model: expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")


def _feeds(names: Sequence[str], feed: Union[Mapping[str, Any], Sequence[Any]]) -> list:
    """Inputs by position from a {name: array} dict (every input, no unknown names) or a list."""
    if isinstance(feed, Mapping):
        unknown = [k for k in feed if k not in names]
        if unknown:
            raise Error(f"input '{unknown[0]}': the model has no input of that name "
                        f"(inputs: {', '.join(names)})")
        missing = [n for n in names if n not in feed]
        if missing:
            raise Error(f"input '{missing[0]}': not given")
        return [feed[n] for n in names]
    return list(feed)


def _select(outputs: list, names: List[str], wanted: Optional[Sequence[str]]) -> list:
    if wanted is None:
        return outputs
    picked = []
    for w in wanted:
        if w not in names:
            raise Error(f"output '{w}': the model has no output of that name "
                        f"(outputs: {', '.join(names)})")
        picked.append(outputs[names.index(w)])
    return picked


class SessionOptions:
    """The part of onnxruntime.SessionOptions aicc reads: graph optimization level (0-3, aicc's
    -O; ONNX Runtime's enum values map 0 -> 0, 1 -> 1, 2 -> 2, 99 -> 3) and thread count."""

    def __init__(self) -> None:
        self.graph_optimization_level: int = 2
        self.intra_op_num_threads: int = 0  # 0: AICC_NUM_THREADS, else all cores


class InferenceSession:
    """ONNX Runtime's InferenceSession surface on aicc: the model is compiled by the JIT on the
    first run for each input shape signature and the compiled code is reused afterwards.

    engine="interp" runs aicc's reference interpreter instead (for debugging numerics).
    `providers` is accepted for compatibility and ignored (aicc targets this CPU).
    run() may be called from several threads: runs of one session are serialized, the GIL is
    released while compiling and running."""

    def __init__(self, path_or_bytes: ModelLike, sess_options: Optional[SessionOptions] = None,
                 providers: Optional[Sequence[Any]] = None, *, engine: str = "jit",
                 dims: Optional[Mapping[str, int]] = None, **kwargs: Any) -> None:
        del providers, kwargs  # accepted like ONNX Runtime's; aicc runs on the CPU it was built on
        opts = sess_options or SessionOptions()
        level = {99: 3}.get(opts.graph_optimization_level, opts.graph_optimization_level)
        if opts.intra_op_num_threads:
            _aicc.set_num_threads(int(opts.intra_op_num_threads))
        data, base = _model_bytes(path_or_bytes)
        self._sess = _aicc.Session(data, base, engine, int(level), dict(dims or {}))
        self._inputs = _node_args(self._sess.inputs())
        self._outputs = _node_args(self._sess.outputs())

    def get_inputs(self) -> List[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        return ["AiccCPUExecutionProvider"]

    def run(self, output_names: Optional[Sequence[str]],
            input_feed: Union[Mapping[str, Any], Sequence[Any]],
            run_options: Any = None) -> List[Any]:
        del run_options
        names = [a.name for a in self._inputs]
        outs = self._sess.run(_feeds(names, input_feed))
        return _select(outs, [a.name for a in self._outputs], output_names)

    @property
    def compiled_shapes(self) -> int:
        """How many executables are compiled and kept: one for every batch of a model whose only
        symbolic dims are a leading batch, else one per input shape signature seen."""
        return self._sess.compiled_shapes()


class CompiledModel:
    """A folder written by `aicc compile` (model.so, model.weights, model.plan, report.json),
    loaded and ready to run. Runs of one instance are serialized (thread-safe)."""

    def __init__(self, directory: Union[str, "os.PathLike[str]"], _owned_tmp: Optional[str] = None):
        self.directory = os.fspath(directory)
        self._tmp = _owned_tmp  # a temporary folder removed with this object
        self._art = _aicc.Artifact(self.directory)
        self.inputs = _node_args(self._art.inputs())
        self.outputs = _node_args(self._art.outputs())

    def run(self, feeds: Union[Mapping[str, Any], Sequence[Any]],
            output_names: Optional[Sequence[str]] = None) -> List[Any]:
        outs = self._art.run(_feeds([a.name for a in self.inputs], feeds))
        return _select(outs, [a.name for a in self.outputs], output_names)

    @property
    def report(self) -> Dict[str, Any]:
        """The compile report (report.json): phases, sizes, and each task's kernel choice."""
        path = os.path.join(self.directory, "report.json")
        if not os.path.exists(path):
            raise Error(f"'{self.directory}' has no report.json")
        with open(path) as f:
            return json.load(f)

    def save(self, directory: Union[str, "os.PathLike[str]"]) -> "CompiledModel":
        """Copies the compiled folder to `directory` (created; files in it are replaced)."""
        dst = os.fspath(directory)
        os.makedirs(dst, exist_ok=True)
        for name in os.listdir(self.directory):
            src = os.path.join(self.directory, name)
            if os.path.isfile(src):
                shutil.copy2(src, os.path.join(dst, name))
        return CompiledModel(dst)

    def __del__(self) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            self._art = None
            shutil.rmtree(tmp, ignore_errors=True)


def compile(model: ModelLike, output_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
            target: str = "native", precision: str = "fp32",
            dims: Optional[Mapping[str, int]] = None, opt_level: int = 2,
            shapes: Optional[Mapping[str, Sequence[int]]] = None) -> CompiledModel:
    """Compiles like `aicc compile MODEL -o OUTPUT_DIR` (a temporary folder when None) and loads
    the result. dims fixes symbolic dimensions by name ({"N": 1}); shapes fixes whole input shapes
    ({"x": [1, 3, 224, 224]}). precision: "fp32" (int8/bf16 are issue #13, not built yet)."""
    if precision != "fp32":
        raise Error(f"precision '{precision}': only fp32 is supported so far")
    tmp = None
    if output_dir is None:
        tmp = tempfile.mkdtemp(prefix="aicc-")
        out = tmp
    else:
        out = os.fspath(output_dir)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        src_tmp = None
    else:
        data, _ = _model_bytes(model)
        src_tmp = tempfile.NamedTemporaryFile(suffix=".onnx", delete=False)
        src_tmp.write(data)
        src_tmp.close()
        path = src_tmp.name
    try:
        _aicc.compile(path, out, target, int(opt_level),
                      [f"{k}={v}" for k, v in (dims or {}).items()],
                      [f"{k}={','.join(str(d) for d in v)}" for k, v in (shapes or {}).items()])
    except BaseException:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if src_tmp is not None:
            os.unlink(src_tmp.name)
    return CompiledModel(out, _owned_tmp=tmp)


def load(directory: Union[str, "os.PathLike[str]"]) -> CompiledModel:
    """Loads a folder written by `aicc compile` (or CompiledModel.save)."""
    return CompiledModel(directory)


# Graph passes that keep the model standard ONNX (no fusion into aicc.Fused, no aicc-only ops).
_PORTABLE_PASSES = "fold-shapes,constant-fold,inline-if,dce,cse,simplify,fold-affine,constant-fold,dce,cse"


def _as_model_proto(data: bytes):
    try:
        import onnx  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return data
    return onnx.load_from_string(data)


def optimize(model: ModelLike, passes: str = _PORTABLE_PASSES):
    """A cleaner ONNX model: constants and shape arithmetic folded, dead and duplicate nodes
    removed, algebraic identities simplified (the passes of `aicc opt --passes`). Returns an
    onnx.ModelProto (bytes when the onnx package is not installed)."""
    data, base = _model_bytes(model)
    return _as_model_proto(_aicc.optimize(data, base, passes))


def autodiff(model: ModelLike, loss: str, wrt: Optional[Sequence[str]] = None,
             keep_outputs: bool = False):
    """The model with its backward graph (`aicc autodiff`): outputs the loss and grad_<name> for
    each tensor in wrt (default: every float initializer)."""
    data, base = _model_bytes(model)
    return _as_model_proto(_aicc.autodiff(data, base, loss, list(wrt or []), keep_outputs))


def set_num_threads(n: int) -> None:
    """Threads for the kernels (counting the caller), for every session and compiled model."""
    _aicc.set_num_threads(int(n))


__all__ = ["Error", "InferenceSession", "SessionOptions", "NodeArg", "CompiledModel", "compile",
           "load", "optimize", "autodiff", "set_num_threads", "__version__"]
