"""Graph passes that an offline model compiler (Ascend's ATC) applies before a model runs.

`specialize` fixes the input shapes (ATC's --input_shape, or one gear of --dynamic_dims) and
folds on the host every node whose result no longer depends on input data: the shape
arithmetic a dynamic-shape export leaves behind (Shape, Gather, Unsqueeze, Concat, ...), ONNX
Constant nodes, casts of constants. Without it each of those runs through the shim and pays
host round trips at every inference.

`cast_floats` runs a float32 graph in float16 or bfloat16 (ATC's --precision_mode=force_fp16):
float32 constants (initializers and constant attributes) and casts to float32 take the narrow
type; constants outside its range saturate to its largest finite value, so a -3.4e38
attention-mask bias stays a very large finite negative number instead of becoming -inf (and
0 * -inf = NaN). Float graph inputs are then fed in the narrow type.
"""

from __future__ import annotations

from dataclasses import replace

import ml_dtypes
import numpy as np

from ..hixl import ArgSpec, get_op, to_numpy
from ..hixl.dtypes import name_of
from ..nixl import Graph
from ..nixl.graph import Node


def _probe(spec: ArgSpec) -> np.ndarray:
    """An array of the spec's shape without its data, for ops that read only the shape."""
    return np.broadcast_to(np.zeros((), to_numpy(spec.dtype)), spec.shape)


SHAPE_ONLY = frozenset({"Shape", "Size"})


def specialize(graph: Graph, inputs: dict[str, ArgSpec]) -> Graph:
    """`graph` with its inputs fixed to `inputs` (shape and dtype per graph input) and every
    node computable on the host folded into a constant. Shapes are checked as they propagate,
    so inputs that do not fit fail here rather than midway through a run."""
    missing = [n for n in graph.inputs if n not in inputs]
    if missing:
        raise ValueError(f"specialize: no shape given for graph input(s) {', '.join(missing)}")
    values = dict(graph.constants)
    specs = {**inputs, **{n: ArgSpec(v.shape, name_of(v.dtype)) for n, v in values.items()}}
    kept: list[Node] = []
    for node in graph.nodes:
        schema = get_op(node.op)
        names = schema.input_names(len(node.inputs))
        known = node.op in SHAPE_ONLY or all(n in values for n in node.inputs if n)
        if known and not set(node.outputs) & set(graph.outputs):
            arrays = [None if not n else values[n] if n in values else _probe(specs[n])
                      for n in node.inputs]
            for name, array in zip(node.outputs, schema.reference(*arrays, **node.attrs)):
                values[name] = array
                specs[name] = ArgSpec(array.shape, name_of(array.dtype))
            continue
        arg_specs = [None if not n else schema.spec_of(k, values[n]) if n in values else specs[n]
                     for n, k in zip(node.inputs, names)]
        for name, spec in zip(node.outputs, schema.infer(arg_specs, node.attrs)):
            specs[name] = ArgSpec(spec.shape, spec.dtype)
        kept.append(node)
    read = {n for node in kept for n in node.inputs} | set(graph.outputs)
    return Graph(inputs=list(graph.inputs), outputs=list(graph.outputs), nodes=kept,
                 constants={n: values[n] for n in values if n in read})


def _narrow(value, dtype: str):
    """A float32 array in `dtype`, saturated to its finite range; anything else unchanged."""
    if not (isinstance(value, np.ndarray) and value.dtype == np.float32):
        return value
    big = float(ml_dtypes.finfo(to_numpy(dtype)).max)
    return np.clip(value, -big, big).astype(to_numpy(dtype))


def cast_floats(graph: Graph, dtype: str) -> Graph:
    """`graph` computing in `dtype` where it computed in float32 (the ops accumulate in float32
    inside, as their kernels and goldens do)."""
    def attrs(node: Node) -> dict:
        out = {k: _narrow(v, dtype) for k, v in node.attrs.items()}
        if node.op == "Cast" and out.get("to") == "float32":
            out["to"] = dtype
        return out
    return Graph(inputs=list(graph.inputs), outputs=list(graph.outputs),
                 nodes=[replace(n, attrs=attrs(n)) for n in graph.nodes],
                 constants={n: _narrow(v, dtype) for n, v in graph.constants.items()})
