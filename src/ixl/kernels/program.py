"""What an elementwise op contributes to a kernel: its compute body, and programs of bodies.

A `Body` is an op's vector instructions over local tensors in the compute dtype. A kernel runs
a *program*: a tuple of `Step`s, each a body applied to value ids (kernel inputs first, then
earlier steps' results). A single op is a one-step program; the fusion pass builds longer ones,
so intermediates stay in UB. The elementwise template runs programs per tile, and the axis
template runs them before and after its op (fused producers and consumers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ..ascend import lang as asc


class BodyArgs:
    """What a body sees: output and inputs in the compute dtype, scratch tensors, `n` live
    elements of this tile, `nv` = n rounded up to whole repeats (compare and select need
    those), and the step's attributes. (A plain class: one is made per step and tile.)"""

    __slots__ = ("y", "xs", "tmp", "n", "nv", "attrs")

    def __init__(self, y: asc.LocalTensor, xs: list, tmp: list, n: int, nv: int,
                 attrs: dict) -> None:
        self.y, self.xs, self.tmp, self.n, self.nv, self.attrs = y, xs, tmp, n, nv, attrs


class Words(NamedTuple):
    """An int64 input as a `Body.words` body sees it: its high words (signed) and its low words
    offset by -2^31, so that both order as signed int32 and (high, low) orders as the int64."""

    hi: asc.LocalTensor
    lo: asc.LocalTensor


@dataclass(frozen=True)
class Body:
    """An op's compute body. `fn` is None for an identity (Cast: the conversion on the way
    out is the op). `scalars` names trailing inputs read once as scalar values (Pow's
    exponent, Clip's bounds) and passed in `attrs`. `ints`: the body also takes int32 values
    as they are (the compute dtype is then int32 and it computes exactly); other bodies see
    int32 inputs converted to float32. `words`: the body takes int64 inputs as `Words`
    (exactly), not converted to float32 (which rounds beyond 2^24). `int_temps`: the scratch
    tensors it needs on integers, where that is more than `temps`."""

    fn: Callable[[BodyArgs], None] | None
    temps: int = 0
    float32: bool = False
    scalars: tuple[str, ...] = ()
    ints: bool = False
    words: bool = False
    int_temps: int | None = None


@dataclass(frozen=True)
class Step:
    """One body of a program: reads values `args` (kernel inputs first, then step results)."""

    op: str
    body: Body
    args: tuple[int, ...]
    attrs: tuple = ()          # sorted (name, value) pairs


def scalar_inputs(steps: tuple[Step, ...]) -> set[int]:
    """The value ids the program reads as scalar operands."""
    out: set[int] = set()
    for s in steps:
        if s.body.scalars:
            out.update(s.args[-len(s.body.scalars):])
    return out


def resolve_program(steps: tuple[Step, ...], values: dict) -> list[tuple]:
    """Per step, once per block: body, data value ids, attributes with the scalar operands'
    values filled in."""
    out = []
    for step in steps:
        n_data = len(step.args) - len(step.body.scalars)
        attrs = dict(step.attrs)
        attrs.update((name, values.get(vid))
                     for name, vid in zip(step.body.scalars, step.args[n_data:]))
        out.append((step.body.fn, step.args[:n_data], attrs))
    return out
