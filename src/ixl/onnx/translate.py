"""ONNX nodes to ixl graph nodes, one translator per ONNX op type.

Most ONNX ops map one to one onto an ixl op of the same name and attributes (ixl follows ONNX
opset 17 and later). The translators here cover the rest: older opsets that gave axes, k, shapes,
starts/ends or clip bounds as attributes (they become constant inputs), variadic Max / Min / Sum
(a chain of binary ops), Softmax before opset 13 (which flattened the input at `axis`), Cast's
ONNX dtype codes. An op or attribute ixl does not implement raises UnsupportedOnnx naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from ..hixl import DTYPES, all_ops, get_op
from ..hixl.dtypes import name_of
from ..nixl import Graph


class UnsupportedOnnx(ValueError):
    """The model uses an op, attribute, dtype or construct that ixl does not implement."""


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

    @property
    def label(self) -> str:
        return f"ONNX node {self.node.name or '(unnamed)'!r} ({self.node.op_type})"

    @property
    def inputs(self) -> list[str]:
        return list(self.node.input)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.node.output)

    def emit(self, op: str, inputs, outputs, **attrs) -> None:
        self.graph.add(op, *inputs, outputs=tuple(outputs), name=self._name(op), **attrs)

    def fresh(self, hint: str) -> str:
        """A tensor name no ONNX tensor uses (ONNX names never hold '#')."""
        return f"{self.node.name or self.node.op_type}#{hint}{len(self.graph.nodes)}"

    def const(self, array, hint: str) -> str:
        name = self.fresh(hint)
        self.graph.constants[name] = np.asarray(array)
        return name

    def pass_through(self, op: str) -> dict:
        """Every remaining attribute, checked against the ixl op's attributes."""
        allowed = get_op(op).attrs
        unknown = [k for k in self.attrs if k not in allowed]
        if unknown:
            raise UnsupportedOnnx(f"{self.label}: attribute {unknown[0]!r} is not supported "
                                  f"(supported: {', '.join(allowed) or 'none'})")
        attrs, self.attrs = self.attrs, {}
        return attrs

    def _name(self, op: str) -> str:
        base = self.node.name or f"{self.node.op_type}_{len(self.graph.nodes)}"
        return base if op == self.node.op_type else f"{base}/{op}"


Translator = Callable[[NodeContext], None]


def attribute_value(attr: onnx.AttributeProto, label: str):
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
}

# ixl ops that are not ONNX ops (an ONNX model naming them is not asking for ixl's semantics).
NOT_ONNX = frozenset({"Maximum", "Minimum", "Silu", "Rsqrt", "Adds", "Muls", "Sort"})


def translator(op_type: str) -> Translator | None:
    if op_type in TRANSLATORS:
        return TRANSLATORS[op_type]
    if op_type in all_ops() and op_type not in NOT_ONNX:
        return direct(op_type)
    return None


def onnx_ops() -> list[str]:
    """The ONNX op types ixl translates."""
    return sorted(set(TRANSLATORS) | (set(all_ops()) - NOT_ONNX))


def translate_node(node: onnx.NodeProto, opset: int, graph: Graph) -> None:
    ctx = NodeContext(node, opset, graph)
    if node.domain not in ("", "ai.onnx"):
        raise UnsupportedOnnx(f"{ctx.label}: domain {node.domain!r} is not supported (only "
                              f"the default ONNX domain)")
    fn = translator(node.op_type)
    if fn is None:
        raise UnsupportedOnnx(f"{ctx.label}: op type {node.op_type} is not supported by ixl "
                              f"(supported: {', '.join(onnx_ops())})")
    ctx.attrs = {a.name: attribute_value(a, ctx.label) for a in node.attribute}
    fn(ctx)
