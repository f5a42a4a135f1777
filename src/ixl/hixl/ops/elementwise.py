"""Elementwise ops (tier S): numpy / ONNX broadcasting for binary ops, same shape for unary."""

from __future__ import annotations

import numpy as np

from ..database import register
from ..dtypes import FLOATS
from ..schema import ArgSpec, OpSchema, SampleCase, TileMultiple, broadcast_shapes


def _same(shape, arity: int) -> tuple:
    return (shape,) * arity


def boundary_cases(arity: int) -> list[SampleCase]:
    """R8's boundary shapes, every input the same shape."""
    return [
        SampleCase("exact multiple of the tile on every core", _same(TileMultiple(2), arity)),
        SampleCase("tile + 1", _same(TileMultiple(1, plus=1), arity)),
        SampleCase("one element", _same((1,), arity)),
        SampleCase("a dim of size 0", _same((0, 16), arity)),
        SampleCase("last dim of 7 elements: bytes not a multiple of 32", _same((5, 7), arity)),
        SampleCase("prime length", _same((1009,), arity)),
        SampleCase("large", _same((1024, 2048), arity)),
    ]


BROADCAST_CASES = [
    SampleCase("scalar broadcast", ((), (6, 5))),
    SampleCase("row broadcast", ((6, 5), (5,))),
    SampleCase("column broadcast", ((6, 1), (6, 5))),
    SampleCase("general broadcast", ((4, 1, 3), (5, 1))),
]


def _infer_broadcast(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(broadcast_shapes(schema.name, [s.shape for s in specs]), specs[0].dtype)]


def _infer_same(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(specs[0].shape, specs[0].dtype)]


def binary(name: str, fn, doc: str, dtypes=FLOATS, **kw) -> OpSchema:
    return register(OpSchema(
        name=name, tier="S", family="elementwise", inputs=("a", "b"), dtypes=tuple(dtypes),
        reference_fn=fn, infer_fn=_infer_broadcast,
        samples=boundary_cases(2) + BROADCAST_CASES, doc=doc, **kw))


def unary(name: str, fn, doc: str, dtypes=FLOATS, **kw) -> OpSchema:
    return register(OpSchema(
        name=name, tier="S", family="elementwise", inputs=("x",), dtypes=tuple(dtypes),
        reference_fn=fn, infer_fn=_infer_same, samples=boundary_cases(1), doc=doc, **kw))


binary("Add", np.add, "y = a + b, broadcasting")
binary("Mul", np.multiply, "y = a * b, broadcasting")
unary("Relu", lambda x: np.maximum(x, 0), "y = max(x, 0)")
