"""ONNX nodes to ixl graph nodes, one translator per ONNX op type.

Most ONNX ops map one to one onto an ixl op of the same name and attributes (ixl follows ONNX
opset 17 and later). The translators here cover the rest: older opsets that gave axes, k, shapes,
starts/ends or clip bounds as attributes (they become constant inputs), variadic Max / Min / Sum
(a chain of binary ops), Softmax before opset 13 (which flattened the input at `axis`), Cast's
ONNX dtype codes. An op or attribute ixl does not implement raises UnsupportedOnnx naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from numpy.typing import ArrayLike
from onnx import numpy_helper

from ..hixl import DTYPES, all_ops, get_op
from ..hixl.dtypes import name_of
from ..nixl import Graph
from . import recurrent, subgraph
from .errors import NeedsShapes, UnsupportedOnnx
from .passes import propagate


def dtype_name(code: int, what: str) -> str:
    """The ixl dtype name of an ONNX TensorProto dtype code."""
    label = onnx.TensorProto.DataType.Name(code)
    try:
        return name_of(onnx.helper.tensor_dtype_to_np_dtype(code))
    except Exception:
        raise UnsupportedOnnx(f"{what} has dtype {label}, which ixl does not support "
                              f"(ixl dtypes: {', '.join(DTYPES)})") from None


@dataclass
class NodeContext:
    """One ONNX node being translated: its attributes (consumed as they are used), its
    inputs and outputs, the model's opset, and the ixl graph that receives the nodes."""

    node: onnx.NodeProto
    opset: int
    graph: Graph
    attrs: dict = field(default_factory=dict)
    # What ONNX shape inference knows of the model's values: name -> (dtype, dims); a dim is an
    # int, or None when symbolic or unknown.
    info: dict = field(default_factory=dict)
    taken: set | None = None            # names in use, once fresh() has needed them
    # The graph inputs as one run gives them, when the model is converted for that run
    # (NeedsShapes): their specs, and the values of the inputs the conversion may read.
    run_specs: dict | None = None
    run_values: dict | None = None

    @property
    def label(self) -> str:
        return f"ONNX node {self.node.name or '(unnamed)'!r} ({self.node.op_type})"

    @property
    def inputs(self) -> list[str]:
        return list(self.node.input)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.node.output)

    def emit(self, op: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any
             ) -> None:
        self.graph.add(op, *inputs, outputs=tuple(outputs), name=self._name(op), **attrs)

    def fresh(self, hint: str) -> str:
        """A tensor name no ONNX tensor uses (ONNX names never hold '#') and no other name of
        the graph holds."""
        if self.taken is None:
            self.taken = set(self.graph.constants) | {o for n in self.graph.nodes
                                                      for o in n.outputs}
        base = f"{self.node.name or self.node.op_type}#{hint}"
        count = len(self.graph.nodes) + len(self.graph.constants)
        while f"{base}{count}" in self.taken:
            count += 1
        self.taken.add(f"{base}{count}")
        return f"{base}{count}"

    def const(self, array: ArrayLike, hint: str) -> str:
        name = self.fresh(hint)
        self.graph.constants[name] = np.asarray(array)
        return name

    def shape_of(self, name: str) -> tuple | None:
        """The static shape of a value when known (a constant's, or inferred), else None."""
        if name in self.graph.constants:
            return tuple(np.shape(self.graph.constants[name]))
        dims = self.info.get(name, (None, None))[1]
        if dims is not None and None not in dims:
            return tuple(dims)
        if self.run_specs is None:
            return None
        spec = self._run_known().specs.get(name)
        return None if spec is None else tuple(spec.shape)

    def constant_value(self, name: str) -> np.ndarray | None:
        """The value of a constant (an initializer or a Constant node's output), else None."""
        if name in self.graph.constants:
            return np.asarray(self.graph.constants[name])
        for node in self.graph.nodes:
            if node.op == "Constant" and node.outputs[0] == name:
                return np.asarray(node.attrs["value"])
        return None

    def known_value(self, name: str) -> np.ndarray | None:
        """`constant_value`, or else the value the host computes for `name` with the nodes so
        far from the constants and, converting for one run, its input shapes and given input
        values (a walk of the graph: for the few nodes whose conversion needs a value)."""
        value = self.constant_value(name)
        if value is None:
            known = self._run_known()
            value = known.values.get(name)
        return None if value is None else np.asarray(value)

    def _run_known(self):
        """What the host knows of the nodes so far (from the constants and this run's
        inputs)."""
        return propagate(self.graph, self.run_specs or {}, self.run_values)

    def needs(self, what: str) -> NeedsShapes:
        """The error for a conversion that needs `what` to be known."""
        when = ("with this run's input shapes and values" if self.run_specs is not None
                else "before the model runs")
        return NeedsShapes(f"{self.label}: {what}, which is not known {when}")

    def convert_body(self, body: onnx.GraphProto, formal: list[str]) -> Graph:
        """An ONNX subgraph as an ixl graph over its formal inputs (names of other scopes it
        reads become further inputs: see subgraph.free_names)."""
        graph = Graph(inputs=list(formal), outputs=[o.name for o in body.output],
                      constants={t.name: numpy_helper.to_array(t) for t in body.initializer})
        for node in body.node:
            translate_node(node, self.opset, graph, self.info)
        return graph

    def translate_here(self, body: onnx.GraphProto) -> None:
        """A subgraph's nodes translated into this node's graph, its outputs becoming this
        node's: a branch reads the enclosing scope by name and ONNX names are unique across
        scopes, so nothing is renamed, and what its nodes need of a run is known to them."""
        for t in body.initializer:
            self.graph.constants[t.name] = numpy_helper.to_array(t)
        for node in body.node:
            translate_node(node, self.opset, self.graph, self.info, self.run_specs,
                           self.run_values)
        for inner, outer in zip(body.output, self.outputs):
            if outer:
                self.emit("Identity", [inner.name], [outer])

    def pass_through(self, op: str) -> dict:
        """Every remaining attribute, checked against the ixl op's attributes."""
        allowed = get_op(op).attrs
        unknown = [k for k in self.attrs if k not in allowed]
        if unknown:
            raise UnsupportedOnnx(f"{self.label}: attribute {unknown[0]!r} is not supported "
                                  f"(supported: {', '.join(allowed) or 'none'})")
        attrs, self.attrs = self.attrs, {}
        return attrs

    def check_consumed(self) -> None:
        """Every attribute has been read (an expansion reads its own)."""
        if self.attrs:
            raise UnsupportedOnnx(f"{self.label}: attribute {next(iter(self.attrs))!r} is not "
                                  f"supported")

    def _name(self, op: str) -> str:
        base = self.node.name or f"{self.node.op_type}_{len(self.graph.nodes)}"
        return base if op == self.node.op_type else f"{base}/{op}"


Translator = Callable[[NodeContext], None]


def attribute_value(attr: onnx.AttributeProto, label: str) -> Any:
    """An attribute as Python / numpy: ints, floats, strings, lists, tensors as arrays."""
    kind = attr.type
    if kind == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if kind in (onnx.AttributeProto.INT, onnx.AttributeProto.FLOAT, onnx.AttributeProto.INTS,
                onnx.AttributeProto.FLOATS):
        value = onnx.helper.get_attribute_value(attr)
        return list(value) if isinstance(value, (list, tuple)) else value
    if kind == onnx.AttributeProto.STRING:
        return attr.s.decode()
    if kind == onnx.AttributeProto.STRINGS:
        return [v.decode() for v in attr.strings]
    if kind == onnx.AttributeProto.GRAPH:
        return attr.g
    raise UnsupportedOnnx(f"{label}: attribute {attr.name!r} of type "
                          f"{onnx.AttributeProto.AttributeType.Name(kind)} is not supported")


# ---- translators ----

def direct(op: str) -> Translator:
    """The ONNX op is the ixl op `op`, attributes and inputs alike."""
    def translate(ctx: NodeContext) -> None:
        ctx.emit(op, ctx.inputs, ctx.outputs, **ctx.pass_through(op))
    return translate


def chain(op: str) -> Translator:
    """A variadic ONNX op (Max, Min, Sum) as a chain of the binary ixl op."""
    def translate(ctx: NodeContext) -> None:
        ctx.pass_through(op)
        acc, rest = ctx.inputs[0], ctx.inputs[1:]
        if not rest:
            ctx.emit("Identity", [acc], ctx.outputs)
        for i, other in enumerate(rest):
            out = ctx.outputs if i == len(rest) - 1 else (ctx.fresh(op.lower()),)
            ctx.emit(op, [acc, other], out)
            acc = out[0]
    return translate


def attr_inputs(op: str, names: tuple[str, ...], since: int) -> Translator:
    """Before opset `since`, the inputs `names` that follow the data input were attributes:
    they become int64 constant inputs."""
    def translate(ctx: NodeContext) -> None:
        inputs = ctx.inputs
        if ctx.opset < since:
            inputs = inputs[:1]
            for name in names:
                value = ctx.attrs.pop(name, None)
                inputs.append("" if value is None else
                              ctx.const(np.array(value, np.int64).reshape(-1), name))
            while inputs[-1] == "":
                inputs.pop()
        ctx.emit(op, inputs, ctx.outputs, **ctx.pass_through(op))
    return translate


def dropout(ctx: NodeContext) -> None:
    """Dropout at inference, as onnxruntime runs it: the output is the input and the mask, when
    asked for, is all true; so in training mode with a ratio of 0. Training mode with another
    ratio (or one not known before the run) draws a random mask, which no golden can check:
    refused."""
    for name in ("ratio", "seed", "is_test"):      # is_test: opset < 7; inference either way
        ctx.attrs.pop(name, None)
    ctx.check_consumed()
    data, *rest = ctx.inputs
    ratio, training = (rest + ["", ""])[:2]
    if training and _constant_flag(ctx, training) is not False \
            and not (ratio and _constant_flag(ctx, ratio) is False):
        raise UnsupportedOnnx(f"{ctx.label}: training_mode {training!r} is not a constant false "
                              f"and the ratio not a constant 0: a training-mode Dropout draws "
                              f"a random mask; ixl runs Dropout at inference only")
    output, *mask = ctx.outputs
    ctx.emit("Identity", [data], [output])
    if mask and mask[0]:
        shape = ctx.fresh("shape")
        ctx.emit("Shape", [data], [shape])
        ctx.emit("Expand", [ctx.const(np.array(True), "kept"), shape], mask[:1])


def _constant_flag(ctx: NodeContext, name: str) -> bool | None:
    """A one-value constant input as a truth value (nonzero), or None when not a constant."""
    value = ctx.constant_value(name)
    return None if value is None else bool(np.asarray(value).reshape(-1)[0])


def softmax(op: str) -> Translator:
    """Before opset 13, (Log)Softmax flattened the input to 2-D at axis (default 1) and
    normalised each row: Shape, Flatten, the op on axis 1, Reshape back."""
    def translate(ctx: NodeContext) -> None:
        if ctx.opset >= 13:
            return direct(op)(ctx)
        axis = ctx.attrs.pop("axis", 1)
        ctx.pass_through(op)
        (x,) = ctx.inputs
        shape, flat, rows = ctx.fresh("shape"), ctx.fresh("flat"), ctx.fresh("rows")
        ctx.emit("Shape", [x], [shape])
        ctx.emit("Flatten", [x], [flat], axis=axis)
        ctx.emit(op, [flat], [rows], axis=1)
        ctx.emit("Reshape", [rows, shape], ctx.outputs)
    return translate


def clip(ctx: NodeContext) -> None:
    """Before opset 11, min and max were float attributes: constants cast like x."""
    inputs = ctx.inputs
    if ctx.opset < 11:
        inputs = inputs[:1]
        for name, default in (("min", -np.inf), ("max", np.inf)):
            bound = ctx.const(np.float32(ctx.attrs.pop(name, default)), name)
            inputs.append(ctx.fresh(name))
            ctx.emit("CastLike", [bound, inputs[0]], [inputs[-1]])
    ctx.emit("Clip", inputs, ctx.outputs, **ctx.pass_through("Clip"))


def _drop_float8_only(ctx: NodeContext) -> None:
    """saturate and round_mode only concern float8 / float4 targets, which ixl rejects."""
    for name in ("saturate", "round_mode"):
        ctx.attrs.pop(name, None)


def cast(ctx: NodeContext) -> None:
    _drop_float8_only(ctx)
    to = dtype_name(ctx.attrs.pop("to"), f"{ctx.label}: attribute 'to'")
    ctx.emit("Cast", ctx.inputs, ctx.outputs, to=to, **ctx.pass_through("Cast"))


def cast_like(ctx: NodeContext) -> None:
    _drop_float8_only(ctx)
    direct("CastLike")(ctx)


CONSTANT_FORMS = {"value": None, "value_float": np.float32, "value_floats": np.float32,
                  "value_int": np.int64, "value_ints": np.int64}


def constant(ctx: NodeContext) -> None:
    (form,) = ctx.attrs
    if form not in CONSTANT_FORMS:
        raise UnsupportedOnnx(f"{ctx.label}: attribute {form!r} is not supported "
                              f"(supported: {', '.join(CONSTANT_FORMS)})")
    value = np.asarray(ctx.attrs.pop(form), CONSTANT_FORMS[form])
    ctx.emit("Constant", [], ctx.outputs, value=value)


def gemm(ctx: NodeContext) -> None:
    """Before opset 7, Gemm said `broadcast=1` for what later became the rule."""
    if ctx.opset < 7:
        ctx.attrs.pop("broadcast", None)
    direct("Gemm")(ctx)


def conv(ctx: NodeContext) -> None:
    """A Conv over one spatial dim runs as a 2-D Conv over (1, L): Unsqueeze x and w at dim 2,
    the attributes gain a leading 1 (or 0 pads), Squeeze the result."""
    w_shape = ctx.shape_of(ctx.inputs[1])
    if w_shape is None or len(w_shape) != 3:
        return direct("Conv")(ctx)
    x, w, *bias = ctx.inputs
    two_d = dict(ctx.attrs)
    for name, lead in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
        if name in two_d:
            two_d[name] = [lead] + list(two_d[name])
    if "pads" in two_d:
        begin, end = two_d["pads"]
        two_d["pads"] = [0, begin, 0, end]
    ctx.attrs = two_d
    attrs = ctx.pass_through("Conv")
    axis = ctx.const(np.array([2], np.int64), "axis")
    x2, w2, y2 = ctx.fresh("x2d"), ctx.fresh("w2d"), ctx.fresh("y2d")
    ctx.emit("Unsqueeze", [x, axis], [x2])
    ctx.emit("Unsqueeze", [w, axis], [w2])
    ctx.emit("Conv", [x2, w2, *bias], [y2], **attrs)
    ctx.emit("Squeeze", [y2, axis], ctx.outputs)


def batch_norm(ctx: NodeContext) -> None:
    """Inference only; attributes of old opsets (is_test, spatial, consumed_inputs) dropped
    where they say what ixl does anyway."""
    for name in ("is_test", "consumed_inputs"):
        ctx.attrs.pop(name, None)
    if ctx.attrs.pop("spatial", 1) != 1:
        raise UnsupportedOnnx(f"{ctx.label}: spatial=0 (statistics per element) is not "
                              f"supported (allowed: 1, per channel)")
    if ctx.attrs.get("training_mode", 0) or len([o for o in ctx.outputs if o]) > 1:
        raise UnsupportedOnnx(f"{ctx.label}: training mode (batch statistics, running mean and "
                              f"variance outputs) is not supported; ixl runs inference")
    ctx.emit("BatchNormalization", ctx.inputs, ctx.outputs[:1],
             **ctx.pass_through("BatchNormalization"))


def split(ctx: NodeContext) -> None:
    """Before opset 13 `split` was an attribute; without sizes the input splits into as many
    equal parts as the node has outputs (num_outputs, opset 18, says so explicitly)."""
    inputs = ctx.inputs
    if ctx.opset < 13 and "split" in ctx.attrs:
        inputs = inputs[:1] + [ctx.const(np.array(ctx.attrs.pop("split"), np.int64), "split")]
    if len(inputs) < 2 or not inputs[1]:
        inputs = inputs[:1]
        ctx.attrs.setdefault("num_outputs", len(ctx.outputs))
    ctx.emit("Split", inputs, ctx.outputs, **ctx.pass_through("Split"))


def pad(ctx: NodeContext) -> None:
    """Before opset 11, pads and the constant value were attributes."""
    inputs = ctx.inputs
    if ctx.opset < 11:
        inputs = [inputs[0], ctx.const(np.array(ctx.attrs.pop("pads"), np.int64), "pads"),
                  ctx.const(np.float32(ctx.attrs.pop("value", 0.0)), "value")]
        cast = ctx.fresh("value")
        ctx.emit("CastLike", [inputs[2], inputs[0]], [cast])
        inputs[2] = cast
    ctx.emit("Pad", inputs, ctx.outputs, **ctx.pass_through("Pad"))


def resize(ctx: NodeContext) -> None:
    """Opset 10's Resize took (x, scales) and mapped coordinates asymmetrically."""
    inputs = ctx.inputs
    if ctx.opset < 11:
        inputs = [inputs[0], "", inputs[1]]
        ctx.attrs.setdefault("coordinate_transformation_mode", "asymmetric")
        ctx.attrs.setdefault("nearest_mode", "floor")
    ctx.emit("Resize", inputs, ctx.outputs, **ctx.pass_through("Resize"))


def group_norm(ctx: NodeContext) -> None:
    """Opset 18 gave scale and bias per group; they become per channel (opset 21) when they are
    constants and x's channel count is known."""
    if ctx.opset >= 21:
        return direct("GroupNormalization")(ctx)
    x, scale, bias = ctx.inputs
    groups = ctx.attrs["num_groups"]
    shape, values = ctx.shape_of(x), [ctx.constant_value(n) for n in (scale, bias)]
    known = [v for v in values if v is not None]
    if shape is None or len(known) < len(values):
        raise UnsupportedOnnx(f"{ctx.label}: opset {ctx.opset} GroupNormalization (scale and "
                              f"bias per group) needs constant scale and bias and a known "
                              f"channel count")
    per_channel = [ctx.const(np.repeat(v, shape[1] // groups), n)
                   for v, n in zip(known, ("scale", "bias"))]
    ctx.emit("GroupNormalization", [x, *per_channel], ctx.outputs,
             **ctx.pass_through("GroupNormalization"))


TRANSLATORS: dict[str, Translator] = {
    "Max": chain("Maximum"),
    "Min": chain("Minimum"),
    "Sum": chain("Add"),
    "Softmax": softmax("Softmax"),
    "LogSoftmax": softmax("LogSoftmax"),
    "Clip": clip,
    "Cast": cast,
    "CastLike": cast_like,
    "Constant": constant,
    "Gemm": gemm,
    "ReduceSum": attr_inputs("ReduceSum", ("axes",), since=13),
    "ReduceMean": attr_inputs("ReduceMean", ("axes",), since=18),
    "ReduceMax": attr_inputs("ReduceMax", ("axes",), since=18),
    "ReduceMin": attr_inputs("ReduceMin", ("axes",), since=18),
    "Squeeze": attr_inputs("Squeeze", ("axes",), since=13),
    "Unsqueeze": attr_inputs("Unsqueeze", ("axes",), since=13),
    "Reshape": attr_inputs("Reshape", ("shape",), since=5),
    "TopK": attr_inputs("TopK", ("k",), since=10),
    "Slice": attr_inputs("Slice", ("starts", "ends", "axes"), since=10),
    **{op: attr_inputs(op, ("axes",), since=18) for op in (
        "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
        "ReduceLogSumExp")},
    "Conv": conv,
    "BatchNormalization": batch_norm,
    "Split": split,
    "Pad": pad,
    "Resize": resize,
    "GroupNormalization": group_norm,
    "If": subgraph.if_,
    "Loop": subgraph.loop,
    "LSTM": recurrent.lstm,
    "GRU": recurrent.gru,
    "Dropout": dropout,
}

# ONNX ops that have no ixl op of their own: the import expands them into graphs of ixl ops.
EXPANSIONS = frozenset({"LSTM", "GRU", "Loop", "Dropout"})

# ixl ops that are not ONNX ops (an ONNX model naming them is not asking for ixl's semantics).
NOT_ONNX = frozenset({"Maximum", "Minimum", "Silu", "Rsqrt", "Adds", "Muls", "Sort", "TransData",
                      "ApplyRotaryPosEmb"})


def translator(op_type: str) -> Translator | None:
    if op_type in TRANSLATORS:
        return TRANSLATORS[op_type]
    if op_type in all_ops() and op_type not in NOT_ONNX:
        return direct(op_type)
    return None


def onnx_ops() -> list[str]:
    """The ONNX op types ixl translates."""
    return sorted(set(TRANSLATORS) | (set(all_ops()) - NOT_ONNX))


def translate_node(node: onnx.NodeProto, opset: int, graph: Graph, info: dict | None = None,
                   run_specs: dict | None = None, run_values: dict | None = None) -> None:
    """`run_specs` (and `run_values`): the graph inputs of the one run the model is converted
    for, where its conversion needs them (errors.NeedsShapes)."""
    ctx = NodeContext(node, opset, graph, info=info or {}, run_specs=run_specs,
                      run_values=run_values)
    if node.domain not in ("", "ai.onnx"):
        raise UnsupportedOnnx(f"{ctx.label}: domain {node.domain!r} is not supported (only "
                              f"the default ONNX domain)")
    fn = translator(node.op_type)
    if fn is None:
        raise UnsupportedOnnx(f"{ctx.label}: op type {node.op_type} is not supported by ixl "
                              f"(supported: {', '.join(onnx_ops())})")
    ctx.attrs = {a.name: attribute_value(a, ctx.label) for a in node.attribute}
    fn(ctx)
