"""Reductions (tier A): ONNX ReduceSum, Max, Min, Mean, Prod, L1, L2, SumSquare, LogSum,
LogSumExp, and CumSum (the running sum).

The axes come as an optional int64 input (opset 18 form); omitted or empty axes reduce every
axis, unless noop_with_empty_axes=1, which makes the op an identity. A reduction over an empty
set gives the identity of the reduction: 0 for sums, 1 for the product, -inf / +inf (or the
dtype's extreme) for max / min, -inf for the logarithms, NaN for the mean.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from ..database import register
from ..dtypes import FLOATS, NUMERIC, to_numpy
from ..errors import ShapeMismatch
from ..schema import (
    ArgSpec,
    Attr,
    OpSchema,
    SampleCase,
    Shape,
    host_value,
    normalize_axes,
    normalize_axis,
)

ATTRS = {
    "keepdims": Attr(int, 1, "keep reduced axes as size 1"),
    "noop_with_empty_axes": Attr(int, 0, "empty axes: 1 = identity, 0 = reduce every axis"),
}


def reduced_axes(op: str, rank: int, given: Sequence[int], noop: int) -> tuple[int, ...] | None:
    """The axes to reduce, sorted; None when the op is an identity."""
    if not len(given):
        return None if noop else tuple(range(rank))
    return tuple(sorted(normalize_axes(op, given, rank)))


def reduced_shape(shape: Sequence[int], axes: Collection[int], keepdims: int) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape)
                 if keepdims or i not in axes)


def _infer(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    data, axes = (specs + [None])[:2]
    assert data is not None                     # a required input: check() saw it
    given = ()
    if axes is not None:
        if len(axes.shape) != 1:
            raise ShapeMismatch(f"{schema.name}: axes must be 1-D, got shape {axes.shape}")
        given = host_value(schema.name, axes, "axes")
    which = reduced_axes(schema.name, len(data.shape), given, attrs["noop_with_empty_axes"])
    if which is None:
        return [ArgSpec(data.shape, data.dtype)]
    return [ArgSpec(reduced_shape(data.shape, which, attrs["keepdims"]), data.dtype)]


def _extreme(dtype: np.dtype, sign: int):
    """The identity of max (sign -1) or min (sign +1): an infinity, else the dtype's extreme."""
    if dtype.kind == "b":
        return sign > 0
    if dtype.kind == "f":
        return sign * np.inf
    info = np.iinfo(dtype)
    return info.max if sign > 0 else info.min


def _log_sum_exp(data, **kw):
    """log(sum(exp(x))) shifted by the max, so exp never overflows; -inf over an empty set."""
    top = np.max(data, initial=-np.inf, **{**kw, "keepdims": True})
    top = np.where(np.isfinite(top), top, 0)
    total = np.log(np.sum(np.exp(data - top), **{**kw, "keepdims": True})) + top
    return total if kw["keepdims"] else np.squeeze(total, axis=kw["axis"])


# How each reduction combines its set (keyword arguments: axis, keepdims).
COMBINE: dict[str, Callable[..., np.ndarray]] = {
    "ReduceSum": np.sum,
    "ReduceMax": lambda x, **kw: np.max(x, initial=_extreme(x.dtype, -1), **kw),
    "ReduceMin": lambda x, **kw: np.min(x, initial=_extreme(x.dtype, +1), **kw),
    "ReduceProd": np.prod,
    "ReduceL1": lambda x, **kw: np.sum(np.abs(x), **kw),
    "ReduceL2": lambda x, **kw: np.sqrt(np.sum(x * x, **kw)),
    "ReduceSumSquare": lambda x, **kw: np.sum(x * x, **kw),
    "ReduceLogSum": lambda x, **kw: np.log(np.sum(x, **kw)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _reducer(name: str):
    def reference(data, axes=None, keepdims=1, noop_with_empty_axes=0):
        given = () if axes is None else axes.reshape(-1).tolist()
        which = reduced_axes(name, data.ndim, given, noop_with_empty_axes)
        if which is None:
            return data
        kw: dict[str, Any] = dict(axis=which, keepdims=bool(keepdims))
        if name == "ReduceMean":
            count = int(np.prod([data.shape[a] for a in which]))
            return np.sum(data, **kw) / count      # 0 / 0 is NaN for an empty set
        return COMBINE[name](data, **kw)
    return reference


def case(note: str, shape: Shape, axes: Sequence[int] | None = None, **attrs: Any
         ) -> SampleCase:
    """A sample: data of `shape`, axes given as a host input unless None."""
    if axes is None:
        return SampleCase(note, (shape,), attrs)
    return SampleCase(note, (shape, (len(axes),)), attrs, values={"axes": axes})


CASES = [
    case("one element", (1,), [0]),
    case("row of 1 element", (37, 1), [-1]),
    case("a dim of size 0, not reduced", (0, 16), [-1]),
    case("a reduced dim of size 0: the empty set", (4, 0), [-1]),
    case("last dim of 7 elements: bytes not a multiple of 32", (5, 7), [-1]),
    case("prime row length", (3, 1009), [-1]),
    case("long row", (4, 32768), [-1]),
    case("first axis", (16, 33), [0]),
    case("middle axis, keepdims=0", (4, 5, 6), [1], keepdims=0),
    case("two axes, negative", (2, 3, 4), [-1, 0]),
    case("axes omitted: every axis", (8, 9)),
    case("empty axes with noop_with_empty_axes=1: identity", (3, 4), [], noop_with_empty_axes=1),
    case("large", (1024, 2048), [-1]),
]


def _product_inputs(schema, specs, rng, attrs):
    """Factors of magnitude e^-0.2 to e^0.2, either sign, never 0: products of thousands of
    them stay in float32's range, so the golden's sequential order and a pairwise order meet
    no overflow (uniform factors in (-4, 4) overflow every long row, and a zero met after an
    overflow makes the sequential product NaN where the product is 0)."""
    data = specs[0]
    magnitude = np.exp(rng.uniform(-0.2, 0.2, data.shape))
    sign = np.where(rng.random(data.shape) < 0.5, -1.0, 1.0)
    return [(sign * magnitude).astype(to_numpy(data.dtype))] + [None] * (len(specs) - 1)


def reduction(name: str, doc: str, extra: tuple[str, ...] = (), **kw: Any) -> OpSchema:
    return register(OpSchema(
        name=name, tier="A", family="reduce", inputs=("data", "axes"), dtypes=FLOATS,
        reference_fn=_reducer(name), infer_fn=_infer, samples=CASES, attrs=ATTRS,
        optional=1, host_inputs=("axes",), type_of={"axes": "I"},
        constraints={"T": NUMERIC + extra, "I": ("int64",)}, doc=doc, **kw))


reduction("ReduceSum", "sum over axes (0 over an empty set)")
reduction("ReduceMean", "mean over axes (NaN over an empty set)")
reduction("ReduceMax", "max over axes (-inf over an empty set)", extra=("bool",))
reduction("ReduceMin", "min over axes (+inf over an empty set)", extra=("bool",))
reduction("ReduceProd", "product over axes (1 over an empty set)", make_inputs=_product_inputs)
reduction("ReduceL1", "sum of |x| over axes (0 over an empty set)")
reduction("ReduceL2", "sqrt of the sum of x^2 over axes (0 over an empty set)")
reduction("ReduceSumSquare", "sum of x^2 over axes (0 over an empty set)")
reduction("ReduceLogSum", "ln of the sum over axes (-inf over an empty set)",
          input_range=(0.01, 4.0))
reduction("ReduceLogSumExp", "ln of the sum of exp(x) over axes, computed shifted by the max "
          "(-inf over an empty set)")


# ---- CumSum: the running sum along one axis ----

def _infer_cumsum(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, axis = specs
    if axis.size != 1 or len(axis.shape) > 1:
        raise ShapeMismatch(f"CumSum: axis must hold one value (a scalar), got shape {axis.shape}")
    normalize_axis("CumSum", host_value("CumSum", axis, "axis")[0], max(len(x.shape), 1))
    return [ArgSpec(x.shape, x.dtype)]


def _cumsum(x, axis, exclusive=0, reverse=0):
    axis = int(axis.reshape(-1)[0]) % max(x.ndim, 1)
    if x.ndim == 0:
        return x
    y = np.flip(x, axis) if reverse else x
    total = np.cumsum(y, axis=axis, dtype=y.dtype)
    if exclusive:
        total = total - y
    return np.flip(total, axis) if reverse else total


def _axis_case(note, shape, axis, **attrs) -> SampleCase:
    return SampleCase(note, (shape, ()), attrs, values={"axis": axis})


register(OpSchema(
    name="CumSum", tier="A", family="reduce", inputs=("x", "axis"), dtypes=FLOATS,
    reference_fn=_cumsum, infer_fn=_infer_cumsum, host_inputs=("axis",),
    type_of={"axis": "I"}, constraints={"T": NUMERIC, "I": ("int32", "int64")},
    attrs={"exclusive": Attr(int, 0, "1: each sum leaves out its own element"),
           "reverse": Attr(int, 0, "1: sums run from the end")},
    doc="y[i] = x[0] + ... + x[i] along axis (exclusive: up to i - 1; reverse: from the end)",
    samples=[_axis_case("one element", (1,), 0),
             _axis_case("rows", (8, 100), 1),
             _axis_case("first axis, exclusive", (16, 33), 0, exclusive=1),
             _axis_case("reverse, negative axis", (4, 5, 6), -1, reverse=1),
             _axis_case("reverse and exclusive", (5, 7), 1, reverse=1, exclusive=1),
             _axis_case("a dim of size 0", (0, 16), 1),
             _axis_case("long row", (2, 32768), 1)]))
