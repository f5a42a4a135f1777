"""Comparisons and selection (tier S): boolean outputs, boolean conditions, broadcasting."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..database import register
from ..dtypes import ALL, FLOATS, NUMERIC, to_numpy
from ..schema import ArgSpec, OpSchema, SampleCase, TileMultiple, broadcast_shapes, uniform
from .elementwise import BROADCAST_CASES, boundary_cases, infer_same


def _infer_bool(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(broadcast_shapes(schema.name, [s.shape for s in specs]), "bool")]


def _infer_where(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(broadcast_shapes("Where", [s.shape for s in specs]), specs[1].dtype)]


def _edges(dtype: np.dtype) -> np.ndarray:
    """Integers where an exact comparison is easy to get wrong: the type's ends, float32's
    last exact integer, the int32 words' edges (of an int64), and neighbours that round to
    the same float32 (within 128 below 2^31) or share a word."""
    info = np.iinfo(dtype)
    base = [0, 1, 2 ** 24, 2 ** 24 + 1, 2 ** 30 + 64, 2 ** 30 + 65, 2 ** 31 - 129,
            2 ** 31 - 1, info.max, info.min]
    if dtype.itemsize == 8:
        base += [2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 32 + 2 ** 31, 3 << 32,
                 (3 << 32) + 7, 2 ** 55 + 1, 2 ** 62]
    values = {int(np.clip(s * v + d, info.min, info.max))
              for v in base for s in (1, -1) for d in (0, 1, -1)}
    return np.array(sorted(values), dtype)


def _compare_inputs(schema, specs, rng, attrs):
    """Floats uniform in the input range; integers drawn mostly from `_edges`, the rest from
    the whole type; a second input of the first's shape is, in most places, the first itself
    or a neighbour of it (equal and nearly equal pairs)."""
    out: list[np.ndarray] = []
    for spec in specs:
        dtype = to_numpy(spec.dtype)
        if dtype.kind not in "iu":
            out.append(uniform(spec, rng, schema.input_range))
            continue
        info = np.iinfo(dtype)
        edges = rng.choice(_edges(dtype), spec.shape)
        anywhere = rng.integers(info.min, info.max, spec.shape, dtype, endpoint=True)
        x = np.where(rng.random(spec.shape) < 0.8, edges, anywhere).astype(dtype)
        if out and spec.shape == out[0].shape:
            first = out[0]
            with np.errstate(over="ignore"):
                near = [first, first + dtype.type(1), first - dtype.type(1)]
            x = np.choose(rng.integers(0, 5, spec.shape), near + [x, x])
        out.append(x)
    return out


INT_CASES = [
    SampleCase("integers, equal and neighbouring pairs", ((8, 301), (8, 301)),
               dtypes=("int32", "int64")),
    SampleCase("integers, edge values against edge values", ((47, 1), (1, 47)),
               dtypes=("int32", "int64")),
    SampleCase("integers, tile + 1", (TileMultiple(1, plus=1),) * 2, dtypes=("int32", "int64")),
    SampleCase("integers, row against column (a causal mask from positions)", ((1, 300), (7, 1)),
               dtypes=("int32", "int64")),
    SampleCase("integers, row against one position", ((1, 300), (1, 1)),
               dtypes=("int32", "int64")),
    SampleCase("integers, general broadcast", ((4, 1, 3), (5, 1)), dtypes=("int32", "int64")),
]


def comparison(name: str, fn: Callable[..., np.ndarray], doc: str, extra: tuple[str, ...] = ()
               ) -> OpSchema:
    return register(OpSchema(
        name=name, tier="S", family="compare", inputs=("a", "b"), dtypes=FLOATS,
        reference_fn=fn, infer_fn=_infer_bool, constraints={"T": NUMERIC + extra},
        make_inputs=_compare_inputs, samples=boundary_cases(2) + BROADCAST_CASES + INT_CASES,
        doc=doc))


comparison("Equal", np.equal, "y = (a == b), broadcasting; bool output", extra=("bool",))
comparison("Less", np.less, "y = (a < b), broadcasting; bool output")
comparison("Greater", np.greater, "y = (a > b), broadcasting; bool output")

register(OpSchema(
    name="Not", tier="S", family="compare", inputs=("x",), dtypes=("bool",),
    reference_fn=np.logical_not, infer_fn=infer_same,
    samples=boundary_cases(1), doc="y = not x, elementwise on bool"))

register(OpSchema(
    name="Where", tier="S", family="compare", inputs=("condition", "x", "y"), dtypes=FLOATS,
    reference_fn=np.where, infer_fn=_infer_where, type_of={"condition": "B"},
    constraints={"B": ("bool",), "T": ALL},
    doc="out = x where condition else y, all three broadcasting",
    samples=boundary_cases(3) + [
        SampleCase("condition broadcast over rows", ((5,), (6, 5), (6, 5))),
        SampleCase("all three broadcast", ((4, 1, 1), (1, 3, 1), (1, 1, 2)))]))
comparison("GreaterOrEqual", np.greater_equal, "y = (a >= b), broadcasting; bool output")
comparison("LessOrEqual", np.less_equal, "y = (a <= b), broadcasting; bool output")


def logical(name: str, fn: Callable[..., np.ndarray], doc: str) -> OpSchema:
    return register(OpSchema(
        name=name, tier="S", family="compare", inputs=("a", "b"), dtypes=("bool",),
        reference_fn=fn, infer_fn=_infer_bool, samples=boundary_cases(2) + BROADCAST_CASES,
        doc=doc))


logical("And", np.logical_and, "y = a and b, elementwise on bool, broadcasting")
logical("Or", np.logical_or, "y = a or b, elementwise on bool, broadcasting")
logical("Xor", np.logical_xor, "y = a xor b, elementwise on bool, broadcasting")
