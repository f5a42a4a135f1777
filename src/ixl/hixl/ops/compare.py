"""Comparisons and selection (tier S): boolean outputs, boolean conditions, broadcasting."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..database import register
from ..dtypes import ALL, FLOATS, NUMERIC
from ..schema import ArgSpec, OpSchema, SampleCase, broadcast_shapes
from .elementwise import BROADCAST_CASES, boundary_cases, infer_same


def _infer_bool(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(broadcast_shapes(schema.name, [s.shape for s in specs]), "bool")]


def _infer_where(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    return [ArgSpec(broadcast_shapes("Where", [s.shape for s in specs]), specs[1].dtype)]


def comparison(name: str, fn: Callable[..., np.ndarray], doc: str, extra: tuple[str, ...] = ()
               ) -> OpSchema:
    return register(OpSchema(
        name=name, tier="S", family="compare", inputs=("a", "b"), dtypes=FLOATS,
        reference_fn=fn, infer_fn=_infer_bool, constraints={"T": NUMERIC + extra},
        samples=boundary_cases(2) + BROADCAST_CASES, doc=doc))


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
