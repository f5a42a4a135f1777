"""The host tiling cache: a kernel's LaunchPlan for a case, computed once and reused.

With dynamic shapes the host tiling runs on every call (R5: the tiling is a host function of
the shapes); a model run many times at a few shapes asks it the same questions, so the plans
are kept by everything a tiling function reads: the chip, the tiling function, the input and
output descs (shapes, dtypes, storage, the host-read values of shape inputs), the attributes
and the tuning configuration. A refusal (DoesNotFit, KernelDeclined) is kept too. The cache is
process-wide, bounded (least recently used out first) and safe to share between threads;
`IXL_LOG=debug` prints each hit and miss with the running counts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import log
from .errors import KernelDeclined

if TYPE_CHECKING:
    from ..ascend.chips import ChipSpec
    from .registry import LaunchPlan
    from .tuning import TuningConfig

CAPACITY = 4096         # plans kept ([U]: a bound on memory, not a measured optimum)


@dataclass
class Stats:
    hits: int = 0
    misses: int = 0


_lock = threading.Lock()
_plans: OrderedDict = OrderedDict()
_stats = Stats()


def _frozen(value):
    """A hashable stand-in for an attribute value (lists, arrays, nested graphs)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return value


def plan(tiling: Callable[..., LaunchPlan], op: str, in_descs: list, out_descs: list,
         attrs: dict, chip: ChipSpec, config: TuningConfig | None) -> LaunchPlan:
    """tiling(in_descs, out_descs, attrs, chip, config), from the cache when asked before."""
    key = (chip.name, id(tiling), tuple(in_descs), tuple(out_descs), _frozen(attrs), config)
    with _lock:
        hit = _plans.get(key)
        if hit is not None:
            _plans.move_to_end(key)
            _stats.hits += 1
            counts = (_stats.hits, _stats.misses)
    if hit is not None:
        log.tiling_cache(op, True, *counts)
        _, result = hit
        if isinstance(result, KernelDeclined):
            raise result
        return result
    try:
        result = tiling(in_descs, out_descs, attrs, chip, config)
    except KernelDeclined as refused:
        result = refused
    with _lock:
        _plans[key] = (tiling, result)     # the function is kept: its id stays unique
        _stats.misses += 1
        counts = (_stats.hits, _stats.misses)
        while len(_plans) > CAPACITY:
            _plans.popitem(last=False)
    log.tiling_cache(op, False, *counts)
    if isinstance(result, KernelDeclined):
        raise result
    return result


def stats() -> Stats:
    """Hits and misses since the process started (or the last clear)."""
    with _lock:
        return Stats(_stats.hits, _stats.misses)


def clear() -> None:
    with _lock:
        _plans.clear()
        _stats.hits = _stats.misses = 0
