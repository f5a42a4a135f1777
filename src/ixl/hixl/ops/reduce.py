"""Reductions (tier A): ONNX ReduceSum / ReduceMax / ReduceMin / ReduceMean.

The axes come as an optional int64 input (opset 18 form); omitted or empty axes reduce every
axis, unless noop_with_empty_axes=1, which makes the op an identity. A reduction over an empty
set gives the identity of the reduction: 0 for sums, -inf / +inf (or the dtype's extreme) for
max / min, NaN for the mean.
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import FLOATS, NUMERIC
from ..errors import ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, host_value, normalize_axes

ATTRS = {
    "keepdims": Attr(int, 1, "keep reduced axes as size 1"),
    "noop_with_empty_axes": Attr(int, 0, "empty axes: 1 = identity, 0 = reduce every axis"),
}


def reduced_axes(op: str, rank: int, given, noop: int) -> tuple[int, ...] | None:
    """The axes to reduce, sorted; None when the op is an identity."""
    if not len(given):
        return None if noop else tuple(range(rank))
    return tuple(sorted(normalize_axes(op, given, rank)))


def reduced_shape(shape, axes, keepdims: int) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape)
                 if keepdims or i not in axes)


def _infer(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    data, axes = (specs + [None])[:2]
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


def _reducer(name: str):
    def reference(data, axes=None, keepdims=1, noop_with_empty_axes=0):
        given = () if axes is None else axes.reshape(-1).tolist()
        which = reduced_axes(name, data.ndim, given, noop_with_empty_axes)
        if which is None:
            return data
        kw = dict(axis=which, keepdims=bool(keepdims))
        if name == "ReduceSum":
            return np.sum(data, **kw)
        if name == "ReduceMean":
            count = int(np.prod([data.shape[a] for a in which]))
            return np.sum(data, **kw) / count      # 0 / 0 is NaN for an empty set
        if name == "ReduceMax":
            return np.max(data, initial=_extreme(data.dtype, -1), **kw)
        return np.min(data, initial=_extreme(data.dtype, +1), **kw)
    return reference


def case(note: str, shape, axes=None, **attrs) -> SampleCase:
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


def reduction(name: str, doc: str, extra: tuple[str, ...] = ()) -> OpSchema:
    return register(OpSchema(
        name=name, tier="A", family="reduce", inputs=("data", "axes"), dtypes=FLOATS,
        reference_fn=_reducer(name), infer_fn=_infer, samples=CASES, attrs=ATTRS,
        optional=1, host_inputs=("axes",), type_of={"axes": "I"},
        constraints={"T": NUMERIC + extra, "I": ("int64",)}, doc=doc))


reduction("ReduceSum", "sum over axes (0 over an empty set)")
reduction("ReduceMean", "mean over axes (NaN over an empty set)")
reduction("ReduceMax", "max over axes (-inf over an empty set)", extra=("bool",))
reduction("ReduceMin", "min over axes (+inf over an empty set)", extra=("bool",))
