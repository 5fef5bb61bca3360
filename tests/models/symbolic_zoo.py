"""The zoo's models with symbolic dims, as an export with dynamic axes writes them (shared by
tests/models/check_dynamic_shapes.py and bench/dynamic_vs_fixed.py)."""
import onnx
from onnx import numpy_helper


def renamed(model, dims):
    """The model (weights where they are) with each (axis, symbol) of `dims` named on every input
    and output."""
    m = onnx.load(model, load_external_data=False)
    for v in list(m.graph.input) + list(m.graph.output):
        shape = v.type.tensor_type.shape.dim
        for axis, symbol in dims:
            if axis < len(shape):
                shape[axis].ClearField("dim_value")
                shape[axis].dim_param = symbol
    del m.graph.value_info[:]
    return m


def length_symbolic(model):
    """bert_like_encoder ([1, 128, 768]) with its length symbolic: dim 1 of the input and output
    named S, each Reshape shape holding 128 (and no -1) with -1 there (its export baked 128 in)."""
    m = renamed(model, [(1, "S")])
    shapes = {n.input[1] for n in m.graph.node if n.op_type == "Reshape"}
    consts = {n.output[0]: n.attribute[0].t for n in m.graph.node if n.op_type == "Constant"}
    consts.update({t.name: t for t in m.graph.initializer})
    for name in shapes & set(consts):
        a = numpy_helper.to_array(consts[name]).copy()
        if 128 in a and -1 not in a:
            a[a == 128] = -1
            consts[name].CopyFrom(numpy_helper.from_array(a, consts[name].name))
    return m
