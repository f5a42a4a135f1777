"""Indexing and ordering (tier C): Gather, TopK, Sort, ArgMax.

Their work depends on the data (which rows, which order), so on the chip they need host-side
decisions at run time. Ties are ordered by index, lower first, in both directions (ONNX TopK).
"""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import ALL, FLOATS, INDEX, NUMERIC
from ..errors import AttrError, ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, host_value, normalize_axis, uniform

ORDER_TYPES = {"T": NUMERIC}


# ---- Gather ----

def _infer_gather(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    data, indices = specs
    axis = normalize_axis("Gather", attrs["axis"], len(data.shape))
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    return [ArgSpec(shape, data.dtype)]


def _gather(data, indices, axis=0):
    size = data.shape[axis]
    bad = (indices < -size) | (indices >= size)
    if bad.any():
        raise ShapeMismatch(f"Gather: index {int(indices[bad][0])} is out of range for axis "
                            f"{axis} of size {size} (allowed: {-size}..{size - 1})")
    return np.take(data, np.where(indices < 0, indices + size, indices), axis=axis)


def _gather_inputs(schema, specs, rng, attrs):
    """Indices in range, negative ones included."""
    data, indices = specs
    size = data.shape[normalize_axis("Gather", attrs["axis"], len(data.shape))]
    idx = rng.integers(-size, size, indices.shape) if size else np.zeros(indices.shape)
    return [uniform(data, rng, schema.input_range), idx.astype(indices.dtype)]


# ---- ordering: TopK, Sort, ArgMax ----

def stable_order(x, axis: int, descending: bool):
    """Indices that sort x along axis; equal values keep index order in both directions."""
    if descending:      # an order-reversing key that cannot overflow
        x = ~x if x.dtype.kind in "iub" else -x
    return np.argsort(x, axis=axis, kind="stable")


def _tied_inputs(schema, specs, rng, attrs):
    """Values on a 0.5 grid: rows longer than 17 hold ties, which the tie order must settle."""
    first = uniform(specs[0], rng, schema.input_range)
    if first.dtype.kind == "f":
        first = (np.round(first.astype(np.float32) * 2) / 2).astype(first.dtype)
    return [first] + [uniform(s, rng, schema.input_range) for s in specs[1:]]


def _infer_topk(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x, k_spec = specs
    axis = normalize_axis("TopK", attrs["axis"], len(x.shape))
    if k_spec.size != 1 or len(k_spec.shape) > 1:
        raise ShapeMismatch(f"TopK: k must hold one value (shape (1,)), got shape {k_spec.shape}")
    k = int(host_value("TopK", k_spec, "k")[0])
    if not 0 <= k <= x.shape[axis]:
        raise AttrError(f"TopK: k={k} is out of range for axis {attrs['axis']} of size "
                        f"{x.shape[axis]} (allowed: 0..{x.shape[axis]})")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [ArgSpec(shape, x.dtype), ArgSpec(shape, "int64")]


def _topk(x, k, axis=-1, largest=1, sorted=1):
    """The k largest (smallest) along axis, sorted (sorted=0 is allowed any order: also sorted)."""
    axis %= x.ndim
    order = stable_order(x, axis, bool(largest))
    idx = np.take(order, np.arange(int(k.reshape(-1)[0])), axis=axis)
    return np.take_along_axis(x, idx, axis), idx


def _infer_sort(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x = specs[0]
    normalize_axis("Sort", attrs["axis"], len(x.shape))
    return [ArgSpec(x.shape, x.dtype), ArgSpec(x.shape, "int64")]


def _sort(x, axis=-1, descending=0):
    idx = stable_order(x, axis, bool(descending))
    return np.take_along_axis(x, idx, axis), idx


def _infer_argmax(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    x = specs[0]
    axis = normalize_axis("ArgMax", attrs["axis"], len(x.shape))
    if x.shape[axis] == 0:
        raise ShapeMismatch(f"ArgMax: axis {attrs['axis']} of shape {x.shape} is empty: no "
                            f"maximum to point at")
    shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)
                  if attrs["keepdims"] or i != axis)
    return [ArgSpec(shape, "int64")]


def _argmax(x, axis=0, keepdims=1, select_last_index=0):
    axis %= x.ndim
    if select_last_index:
        idx = x.shape[axis] - 1 - np.argmax(np.flip(x, axis), axis=axis)
    else:
        idx = np.argmax(x, axis=axis)
    return np.expand_dims(idx, axis) if keepdims else idx


# ---- sample cases ----

def _k_case(note, shape, k, **attrs) -> SampleCase:
    return SampleCase(note, (shape, (1,)), attrs, values={"k": [k]})


TOPK_CASES = [
    _k_case("one element", (1,), 1),
    _k_case("rows, k=5", (8, 100), 5),
    _k_case("smallest", (8, 100), 5, largest=0),
    _k_case("k=0: empty outputs", (4, 10), 0),
    _k_case("axis 0", (50, 3), 4, axis=0),
    _k_case("k = whole row of 7 elements", (5, 7), 7),
    _k_case("a dim of size 0", (0, 16), 3),
    _k_case("long row", (2, 32768), 16),
    _k_case("large", (512, 4096), 8),
]

ORDER_CASES = [
    SampleCase("one element", ((1,),)),
    SampleCase("rows", ((8, 100),)),
    SampleCase("descending", ((8, 100),), {"descending": 1}),
    SampleCase("axis 0", ((50, 3),), {"axis": 0}),
    SampleCase("row of 7 elements", ((5, 7),)),
    SampleCase("a dim of size 0", ((0, 16),)),
    SampleCase("prime row length", ((3, 1009),)),
    SampleCase("large", ((512, 4096),)),
]

ARGMAX_CASES = [
    SampleCase("one element", ((1,),)),
    SampleCase("rows, last axis", ((8, 100),), {"axis": -1}),
    SampleCase("rows, keepdims=0", ((8, 100),), {"axis": 1, "keepdims": 0}),
    SampleCase("select_last_index", ((8, 100),), {"axis": 1, "select_last_index": 1}),
    SampleCase("axis 0 of a 3-D tensor", ((6, 4, 5),)),
    SampleCase("a dim of size 0, not reduced", ((0, 16),), {"axis": 1}),
    SampleCase("row of 7 elements", ((5, 7),), {"axis": -1}),
    SampleCase("long row", ((2, 32768),), {"axis": -1}),
    SampleCase("large", ((512, 4096),), {"axis": -1}),
]

register(OpSchema(
    name="Gather", tier="C", family="index", inputs=("data", "indices"), dtypes=FLOATS,
    reference_fn=_gather, infer_fn=_infer_gather, type_of={"indices": "Tind"},
    constraints={"T": ALL, "Tind": INDEX}, make_inputs=_gather_inputs,
    attrs={"axis": Attr(int, 0, "the axis indexed")},
    doc="y = data indexed by `indices` along axis (negative indices count from the end)",
    samples=[
        SampleCase("one element", ((1,), (1,))),
        SampleCase("embedding lookup", ((100, 32), (4, 7))),
        SampleCase("axis 1, 2-D indices", ((3, 10), (2, 2)), {"axis": 1}),
        SampleCase("scalar index drops the axis", ((5, 6), ())),
        SampleCase("negative axis", ((2, 3, 4), (5,)), {"axis": -1}),
        SampleCase("no indices", ((5, 6), (0,))),
        SampleCase("rows of 7 elements", ((20, 7), (9,))),
        SampleCase("large: a vocabulary table", ((8192, 256), (512,))),
    ]))
register(OpSchema(
    name="TopK", tier="C", family="index", inputs=("x", "k"), outputs=("values", "indices"),
    dtypes=FLOATS, reference_fn=_topk, infer_fn=_infer_topk, host_inputs=("k",),
    type_of={"k": "I"}, constraints={**ORDER_TYPES, "I": ("int64",)}, make_inputs=_tied_inputs,
    attrs={"axis": Attr(int, -1, "the axis searched"),
           "largest": Attr(int, 1, "1: the k largest, 0: the k smallest"),
           "sorted": Attr(int, 1, "1: in order (0 allows any order; ixl sorts anyway)")},
    samples=TOPK_CASES, doc="the k largest (or smallest) values along axis and their indices; "
                            "ties: lower index first"))
register(OpSchema(
    name="Sort", tier="C", family="index", inputs=("x",), outputs=("values", "indices"),
    dtypes=FLOATS, reference_fn=_sort, infer_fn=_infer_sort, constraints=ORDER_TYPES,
    make_inputs=_tied_inputs,
    attrs={"axis": Attr(int, -1, "the axis sorted"),
           "descending": Attr(int, 0, "1: largest first")},
    samples=ORDER_CASES, doc="values sorted along axis and where they came from; stable "
                             "(ties keep input order); not an ONNX op"))
register(OpSchema(
    name="ArgMax", tier="C", family="index", inputs=("data",), dtypes=FLOATS,
    reference_fn=_argmax, infer_fn=_infer_argmax, constraints=ORDER_TYPES,
    make_inputs=_tied_inputs,
    attrs={"axis": Attr(int, 0, "the axis searched"),
           "keepdims": Attr(int, 1, "keep the axis as size 1"),
           "select_last_index": Attr(int, 0, "on ties: 1 the last index, 0 the first")},
    samples=ARGMAX_CASES, doc="index of the maximum along axis (int64)"))
