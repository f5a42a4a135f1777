"""An ONNX model as an ixl graph: initializers become constants, nodes become ixl nodes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from ..hixl import ArgSpec, BadInput
from ..hixl.dtypes import name_of
from ..hixl.errors import DtypeError
from ..nixl import Graph
from .errors import UnsupportedOnnx
from .structure import without_weights
from .translate import dtype_name, translate_node


@dataclass(frozen=True)
class ValueSpec:
    """A graph input or output as the model declares it (symbolic dims stay names)."""

    name: str
    dtype: str
    shape: tuple

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass
class Converted:
    graph: Graph
    inputs: list[ValueSpec]
    outputs: list[ValueSpec]
    opset: int


@dataclass
class Declared:
    """A model's inputs and outputs as it declares them, before any node is converted."""

    inputs: list[ValueSpec]
    outputs: list[ValueSpec]


def declared_only(model: onnx.ModelProto) -> Declared:
    """The graph's inputs (those that are not initializers) and outputs."""
    g = model.graph
    weights = {t.name for t in g.initializer}
    return Declared([_value_spec(v, "graph input") for v in g.input if v.name not in weights],
                    [_value_spec(v, "graph output") for v in g.output])


def _value_spec(value: onnx.ValueInfoProto, what: str) -> ValueSpec:
    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        raise UnsupportedOnnx(f"{what} {value.name!r} is of kind {kind}; ixl runs tensors only "
                              f"(no sequences, maps or optionals)")
    tensor = value.type.tensor_type
    dims = tuple(d.dim_value if _known(d) else (d.dim_param or "?") for d in tensor.shape.dim)
    return ValueSpec(value.name, dtype_name(tensor.elem_type, f"{what} {value.name!r}"), dims)


def _known(dim) -> bool:
    """A dim with a size: a negative dim_value (PaddlePaddle's exports write -1) is unknown,
    as a dim without a value is, and onnxruntime takes both as dynamic."""
    return dim.HasField("dim_value") and dim.dim_value >= 0


def initializer_array(tensor: onnx.TensorProto) -> np.ndarray:
    """An initializer's values; a clear error when its bytes do not fill its dims."""
    try:
        return numpy_helper.to_array(tensor)
    except ValueError as e:
        raise BadInput(f"initializer {tensor.name!r} of dims {list(tensor.dims)} cannot be "
                       f"read: {e}") from None


def _initializer(tensor: onnx.TensorProto):
    array = initializer_array(tensor)
    try:
        name_of(array.dtype)
    except DtypeError:
        raise UnsupportedOnnx(f"initializer {tensor.name!r} has dtype "
                              f"{onnx.TensorProto.DataType.Name(tensor.data_type)}, which ixl "
                              f"does not support") from None
    return array


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    raise UnsupportedOnnx("the model imports no default-domain opset")


def value_info(model: onnx.ModelProto, shapes: dict[str, tuple] | None = None
               ) -> dict[str, tuple[str | None, tuple | None]]:
    """What ONNX shape inference knows of every value, subgraphs included: name -> (dtype,
    dims), a dim None where symbolic; with `shapes`, the graph inputs named there have those
    dims. A model shape inference cannot read gives what the model declares."""
    model = without_weights(model)
    shapes = shapes or {}
    if shapes:                              # fixed in a copy: the model stays as declared
        fixed = onnx.ModelProto()
        fixed.CopyFrom(model)
        model = fixed
    for value in model.graph.input:
        if value.name in shapes and value.type.HasField("tensor_type"):
            dims = value.type.tensor_type.shape.dim
            del dims[:]
            for size in shapes[value.name]:
                dims.add().dim_value = int(size)
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001  (inference is a help here; the checker judged the model)
        pass
    info: dict[str, tuple[str | None, tuple | None]] = {}

    def visit(graph: onnx.GraphProto) -> None:
        for value in (*graph.input, *graph.output, *graph.value_info):
            if value.type.WhichOneof("value") != "tensor_type":
                continue
            tensor = value.type.tensor_type
            try:
                dtype = dtype_name(tensor.elem_type, value.name)
            except UnsupportedOnnx:
                dtype = None
            dims = (tuple(d.dim_value if _known(d) else None for d in tensor.shape.dim)
                    if tensor.HasField("shape") else None)
            info[value.name] = (dtype, dims)
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    visit(attr.g)
    visit(model.graph)
    return info


def convert(model: onnx.ModelProto, run_specs: dict[str, ArgSpec] | None = None,
            run_values: dict[str, np.ndarray] | None = None) -> Converted:
    """Translate every node; raises UnsupportedOnnx naming the first thing ixl cannot run.
    With `run_specs` (the graph inputs of one run), the model is converted for inputs of those
    shapes, and of `run_values` for the inputs given there, for the nodes that need them
    (errors.NeedsShapes)."""
    if model.functions:
        raise UnsupportedOnnx(f"model-local functions ({model.functions[0].name}, ...) are not "
                              f"supported")
    g = model.graph
    if g.sparse_initializer:
        raise UnsupportedOnnx("sparse initializers are not supported")
    opset = default_opset(model)
    constants = {t.name: _initializer(t) for t in g.initializer}
    declared = declared_only(model)
    inputs, outputs = declared.inputs, declared.outputs
    graph = Graph(inputs=[v.name for v in inputs], outputs=[v.name for v in outputs],
                  constants=constants)
    info = value_info(model, {n: s.shape for n, s in (run_specs or {}).items()})
    for node in g.node:
        translate_node(node, opset, graph, info, run_specs, run_values)
    graph.validate()
    return Converted(graph, inputs, outputs, opset)
