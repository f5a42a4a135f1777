"""The reductions every reduction kernel shares, one row per kind: the block reduction (one
result per 32-byte block), the whole-repeat reduction (one result per repeat), the elementwise
combination of two partial results, and the identity (what pad lanes hold and accumulators
start from)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..ascend import lang as asc


@dataclass(frozen=True)
class Reducer:
    kind: str
    block: Callable      # asc.block_reduce_*: one value per 32-byte block
    whole: Callable      # asc.whole_reduce_*: one value per repeat
    combine: Callable    # asc.add / max / min of two tensors
    identity: float


REDUCERS: dict[str, Reducer] = {r.kind: r for r in (
    Reducer("sum", asc.block_reduce_sum, asc.whole_reduce_sum, asc.add, 0.0),
    Reducer("max", asc.block_reduce_max, asc.whole_reduce_max, asc.max, -math.inf),
    Reducer("min", asc.block_reduce_min, asc.whole_reduce_min, asc.min, math.inf),
)}
