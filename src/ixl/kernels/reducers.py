"""The reductions every reduction kernel shares, one row per kind: the block reduction (one
result per 32-byte block), the whole-repeat reduction (one result per repeat), the elementwise
combination of two partial results, and the identity (what pad lanes hold and accumulators
start from). The product has only its combination: the layouts reduce with that alone."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc


def _saturating_mul(dst, a, b, count_or_mask, repeat_times=None, params=None) -> None:
    """dst = a * b held within the finite range: a product whose partial results overflow
    saturates instead of becoming infinity, so a zero elsewhere in the set still makes it 0
    (IEEE would give inf x 0 = NaN, which a sequential product avoids by luck of order);
    `unsaturate` turns a saturated result into the infinity it stands for. (An infinite input
    saturates too: with a zero in its set the product is 0, not NaN.)"""
    asc.mul(dst, a, b, count_or_mask, repeat_times, params)
    limit = float(np.finfo(dst.dtype).max)
    same = () if repeat_times is None else (repeat_times, asc.UnaryRepeatParams(
        params.dst_blk_stride, params.dst_blk_stride, params.dst_rep_stride,
        params.dst_rep_stride))
    asc.mins(dst, dst, limit, count_or_mask, *same)
    asc.maxs(dst, dst, -limit, count_or_mask, *same)


def unsaturate(dst: asc.LocalTensor, tmp: asc.LocalTensor, n: int) -> None:
    """dst +/-max (a saturated product) becomes +/-inf, every other value stays: the quotient
    by max truncates to +/-1 or 0 (NaN to 0), and dst + that x max overflows only for a
    saturated one.
    Scratch: tmp."""
    limit = float(np.finfo(dst.dtype).max)
    as_int = tmp.reinterpret(np.int32)
    asc.duplicate(tmp, limit, n)
    asc.div(tmp, dst, tmp, n)
    asc.cast(as_int, tmp, asc.RoundMode.CAST_TRUNC, n)
    asc.cast(tmp, as_int, asc.RoundMode.CAST_NONE, n)
    asc.muls(tmp, tmp, limit, n)
    asc.add(dst, dst, tmp, n)


@dataclass(frozen=True)
class Reducer:
    kind: str
    block: Callable | None   # asc.block_reduce_*: one value per 32-byte block (None: no such
    whole: Callable | None   # asc.whole_reduce_*: one value per repeat        instruction)
    combine: Callable        # asc.add / max / min / mul of two tensors
    identity: float


REDUCERS: dict[str, Reducer] = {r.kind: r for r in (
    Reducer("sum", asc.block_reduce_sum, asc.whole_reduce_sum, asc.add, 0.0),
    Reducer("max", asc.block_reduce_max, asc.whole_reduce_max, asc.max, -math.inf),
    Reducer("min", asc.block_reduce_min, asc.whole_reduce_min, asc.min, math.inf),
    Reducer("prod", None, None, _saturating_mul, 1.0),   # the ISA has no product reduction
)}


# The elementwise maps a reduction applies to each element before it reduces (ReduceL1's abs,
# ReduceSumSquare's square) or to each result after (ReduceL2's sqrt, ReduceLogSum's ln):
# fn(dst, src, count).
MAPS: dict[str, Callable] = {
    "abs": asc.abs,
    "square": lambda dst, src, n: asc.mul(dst, src, src, n),
    "sqrt": asc.sqrt,
    "ln": asc.ln,
}
