"""Native ReduceSum, ReduceMax, ReduceMin and ReduceMean on the axis template.

A reduction is one statistic per unit, merged over segments with its own combination. The host
tiling reads the reduced axes from the axes input's desc, which carries the contents the host
read back; without them (a caller that hands descs alone) it learns them from the input and
output shapes, which is exact with keepdims=1, and a keepdims=0 call whose shapes two axis sets
explain ((3, 2, 2) -> (3, 2) from axis 1 or axis 2) declines to the shim, visibly.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from ..ascend import lang as asc
from ..hixl.dtypes import FLOATS
from ..nixl import KernelEntry, register_kernel
from .axis_kernel import AxisOp, make_kernel
from .axis_plan import TUNING_SPACE, padded_storage, plan
from .reduce_split import SplitTiling, split_kernel, split_plan
from .reducers import REDUCERS
from .version import BUILT_FOR_RUNTIME


class Reduce(AxisOp):
    has_y = False
    stat_outputs = ((0, None),)

    def __init__(self, kind: str, mean: bool = False):
        self.kind, self.mean = kind, mean
        self.pad = REDUCERS[kind].identity
        self.empty = (np.nan if mean else REDUCERS[kind].identity,)

    def first(self, tile, x, st, n):
        tile.reduce(self.kind, x, st[0], keep=False)

    def merge(self, tile, acc, seg, tmp, n_acc, n_seg):
        REDUCERS[self.kind].combine(acc[0], acc[0], seg[0], tile.nstat)

    def finalize(self, tile, st, n):
        if self.mean:
            asc.muls(st[0], st[0], 1.0 / n, tile.nstat)


def _canonical(shape: tuple, removed) -> frozenset:
    """Reducing a size-1 dim changes nothing: leave those out."""
    return frozenset(i for i in removed if shape[i] != 1)


def reduced_axes(shape: tuple, out_shape: tuple) -> frozenset:
    """The axes whose reduction turns `shape` into `out_shape` (a call `declines` let through)."""
    if len(shape) == len(out_shape):
        return frozenset(i for i, (a, b) in enumerate(zip(shape, out_shape)) if a != b)
    for removed in combinations(range(len(shape)), len(shape) - len(out_shape)):
        if tuple(d for i, d in enumerate(shape) if i not in removed) == tuple(out_shape):
            return _canonical(shape, removed)
    raise ValueError(f"no axes reduce {shape} to {out_shape}")


def _declines(in_descs, attrs) -> str | None:
    axes = in_descs[1] if len(in_descs) > 1 else None
    if attrs["keepdims"] or axes is None or not axes.shape[0] or axes.value is not None:
        return padded_storage(in_descs)
    shape = in_descs[0].shape
    seen: dict = {}
    for removed in combinations(range(len(shape)), axes.shape[0]):
        rest = tuple(d for i, d in enumerate(shape) if i not in removed)
        if seen.setdefault(rest, _canonical(shape, removed)) != _canonical(shape, removed):
            return (f"keepdims=0 on shape {list(shape)}: {axes.shape[0]} axes can leave the same "
                    f"output shape from different axes, and the host tiling sees shapes, not "
                    f"the axes values")
    return padded_storage(in_descs)


def _axes(ins, outs) -> frozenset:
    """The reduced axes: read from the axes input when the host has its contents, else
    learned from the shapes."""
    shape = ins[0].shape
    given = ins[1].value if len(ins) > 1 and ins[1] is not None else None
    if given:
        return _canonical(shape, {int(a) % len(shape) for a in given})
    return reduced_axes(shape, outs[0].shape)


def _tiling(op):
    def tiling(ins, outs, attrs, chip, config):
        axes = _axes(ins, outs)
        shape = ins[0].shape
        trailing = axes and axes == frozenset(range(min(axes), len(shape)))
        if trailing:                 # rows of contiguous elements: few long ones split
            units = math.prod(shape[:min(axes)])
            split = split_plan(ins[0], units, op.kind, op.mean, chip, config)
            if split is not None:
                return split
        return plan(op, ins[0], axes, chip, config)
    return tiling


def _kernel(name: str, op):
    axis_kernel = make_kernel(name, op, _split)

    def kernel(ctx, *gm):
        if isinstance(ctx.tiling, SplitTiling):
            return split_kernel(ctx, gm[0], gm[-1])
        return axis_kernel(ctx, *gm)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _split(gm):
    return gm[0], [], None, [gm[-1]]


for _name, _kind, _mean in (("ReduceSum", "sum", False), ("ReduceMax", "max", False),
                            ("ReduceMin", "min", False), ("ReduceMean", "sum", True)):
    _op = Reduce(_kind, _mean)
    register_kernel(KernelEntry(
        op=_name, kernel=_kernel(f"{_name[6:].lower()}_reduce_kernel", _op),
        tiling=_tiling(_op), dtypes=FLOATS, built_for_runtime=BUILT_FOR_RUNTIME,
        declines=_declines, tuning_space=TUNING_SPACE))
