"""Control flow (tier C): If, whose branches are subgraphs.

A branch is anything that can say what it produces from given input specs and compute it on
the host (`Branch`); the ONNX layer wraps an ONNX subgraph as one. An If whose condition is known
before the run is replaced by its branch (an ONNX pass); one decided at run time reads the
condition back and evaluates the chosen branch on the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..branch import Branch
from ..database import register
from ..dtypes import ALL, FLOATS
from ..errors import ShapeMismatch
from ..schema import ArgSpec, Attr, OpSchema, SampleCase, Shape, host_value


@dataclass(frozen=True)
class FunctionBranch(Branch):
    """A branch written as a numpy function (for sample cases and tests)."""

    fn: Callable[..., tuple]
    infer_fn: Callable[[list[ArgSpec]], list[ArgSpec]]

    def infer(self, specs: list[ArgSpec]) -> list[ArgSpec]:
        return self.infer_fn(specs)

    def evaluate(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        return list(self.fn(*arrays))


def _infer_if(schema: OpSchema, specs: list[ArgSpec], attrs: dict) -> list[ArgSpec]:
    cond, values = specs[0], specs[1:]
    if cond.size != 1:
        raise ShapeMismatch(f"If: cond must hold one boolean, got shape {cond.shape}")
    then, other = attrs["then_branch"], attrs["else_branch"]
    if cond.value is not None:
        return (then if host_value("If", cond, "cond")[0] else other).infer(values)
    both = then.infer(values), other.infer(values)
    if [(s.shape, s.dtype) for s in both[0]] != [(s.shape, s.dtype) for s in both[1]]:
        raise ShapeMismatch(f"If: the branches give different outputs "
                            f"({[s.shape for s in both[0]]} and {[s.shape for s in both[1]]}): "
                            f"the condition must be known to size them")
    return both[0]


def _if(cond, *values, then_branch, else_branch):
    branch = then_branch if bool(cond.reshape(-1)[0]) else else_branch
    return tuple(branch.evaluate(list(values)))


def _same_shape(specs):
    return [ArgSpec(np.broadcast_shapes(*[s.shape for s in specs]), specs[0].dtype)]


SCALE = FunctionBranch(lambda x, y: (x * 2 + y,), _same_shape)
DIFFERENCE = FunctionBranch(lambda x, y: (x - y,), _same_shape)
BRANCHES = {"then_branch": SCALE, "else_branch": DIFFERENCE}


def case(note: str, cond: bool, *shapes: Shape) -> SampleCase:
    return SampleCase(note, ((),) + shapes, BRANCHES, values={"cond": cond})


register(OpSchema(
    name="If", tier="C", family="control", inputs=("cond", "inputs"), dtypes=FLOATS,
    reference_fn=_if, infer_fn=_infer_if, variadic=True, heterogeneous=True, optional=1,
    variadic_outputs=True, outputs=("outputs",), host_inputs=("cond",),
    type_of={"cond": "B"}, constraints={"B": ("bool",), "T": ALL},
    attrs={"then_branch": Attr(Branch, None, "run when cond is true", required=True),
           "else_branch": Attr(Branch, None, "run when cond is false", required=True)},
    samples=[case("one element, true", True, (1,), (1,)),
             case("false: the other branch", False, (5, 7), (5, 7)),
             case("broadcast values", True, (6, 1), (5,)),
             case("a dim of size 0", False, (0, 16), (0, 16)),
             case("large", True, (1024, 2048), (1024, 2048))],
    doc="outputs = then_branch(values) if cond else else_branch(values); the branches are "
        "subgraphs over the If's values"))
