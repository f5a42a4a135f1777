"""Native reductions on the axis template: ReduceSum, ReduceMax, ReduceMin, ReduceMean, the
model families' ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and
ReduceLogSumExp, and the global pools (a mean or max over the spatial dims of (N, C, ...)).

A reduction is one statistic per unit, merged over segments with its own combination. The host
tiling reads the reduced axes from the axes input's desc, which carries the contents the host
read back; without them (a caller that hands descs alone) it learns them from the input and
output shapes, which is exact with keepdims=1, and a keepdims=0 call whose shapes two axis sets
explain ((3, 2, 2) -> (3, 2) from axis 1 or axis 2) declines to the shim, visibly.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from ..ascend import lang as asc
from ..hixl.dtypes import FLOATS
from ..nixl import KernelEntry, register_kernel
from ..nixl.tuning import DoesNotFit
from .axis_kernel import AxisOp, make_kernel
from .axis_plan import TUNING_SPACE, AxisTiling, padded_storage, plan
from .norm import Softmax
from .reduce_split import SplitTiling, split_kernel, split_plan
from .reducers import MAPS, REDUCERS, unsaturate
from .version import BUILT_FOR_RUNTIME

if TYPE_CHECKING:
    from .axis_layout import Tile


class Reduce(AxisOp):
    """One reduction of REDUCERS, with an optional map of MAPS on each element before it
    (`pre`: ReduceL1's abs) and on the result after it (`post`: ReduceL2's sqrt)."""

    has_y = False
    stat_outputs = ((0, None),)

    def __init__(self, kind: str, mean: bool = False, pre: str = "", post: str = "",
                 empty: float | None = None) -> None:
        self.kind, self.mean, self.pre, self.post = kind, mean, pre, post
        self.pad = REDUCERS[kind].identity
        self.empty = (np.nan if mean else REDUCERS[kind].identity if empty is None else empty,)

    def needs_aux(self, layout: str) -> bool:
        return self.kind == "prod"     # unsaturate's scratch

    def first(self, tile: Tile, x: asc.LocalTensor, st: list, n: int) -> None:
        if self.pre:                  # the pad lanes hold 0, which abs and square keep
            MAPS[self.pre](x, x, tile.size)
        tile.reduce(self.kind, x, st[0], keep=False)

    def merge(self, tile: Tile, acc: list, seg: list, tmp: asc.LocalTensor, n_acc: int,
              n_seg: int) -> None:
        REDUCERS[self.kind].combine(acc[0], acc[0], seg[0], tile.nstat)

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        if self.mean:
            asc.muls(st[0], st[0], 1.0 / n, tile.nstat)
        if self.post:
            MAPS[self.post](st[0], st[0], tile.nstat)
        if self.kind == "prod":
            unsaturate(st[0], tile.aux, tile.nstat)


class LogSumExp(Softmax):
    """ln(sum(exp(x))): Softmax's statistics (the max, the sum of exp(x - max), segments
    merged as in online softmax), finished as ln(sum) + max; a set of -inf (or an empty one)
    gives -inf."""

    has_y = False
    stat_outputs = ((1, None),)
    empty = (-np.inf,)

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        m, s = st
        asc.ln(s, s, tile.nstat)
        asc.add(s, s, m, tile.nstat)


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


@dataclass(frozen=True)
class IdentityTiling(AxisTiling):
    """noop_with_empty_axes=1 and no axes: the op is the identity, which the kernel runs as
    COPY (a reduction over nothing, without the op's maps: ReduceL1 then gives x, not |x|)."""


COPY = Reduce("sum")


def _identity(ins, attrs) -> bool:
    axes = ins[1] if len(ins) > 1 else None
    return bool(attrs.get("noop_with_empty_axes")) and (axes is None or axes.shape[0] == 0)


def _tiling(op, axes_of=None, copies_identity: bool = False):
    """The host tiling; `axes_of(ins, outs)` gives the reduced axes (default: the axes input,
    else the shapes); with `copies_identity`, a no-op call runs as COPY (IdentityTiling)."""
    def tiling(ins, outs, attrs, chip, config):
        if copies_identity and _identity(ins, attrs):
            launch = plan(COPY, ins[0], frozenset(), chip, config)
            t = launch.tiling
            return dataclasses.replace(launch, tiling=IdentityTiling(
                **{f.name: getattr(t, f.name) for f in dataclasses.fields(t)}))
        axes = (axes_of or _axes)(ins, outs)
        shape = ins[0].shape
        trailing = axes and axes == frozenset(range(min(axes), len(shape)))
        splits = isinstance(op, Reduce) and REDUCERS[op.kind].whole is not None
        if trailing and splits:      # rows of contiguous elements: few long ones split
            units = math.prod(shape[:min(axes)])
            split = split_plan(ins[0], units, op.kind, op.mean, chip, config, op.pre, op.post)
            if split is not None:
                return split
        launch = plan(op, ins[0], axes, chip, config)
        if getattr(op, "kind", "") == "prod" and launch.tiling.compute_dtype != "float32":
            raise DoesNotFit("the product reduction accumulates in float32 only")
        return launch
    return tiling


def _kernel(name: str, op):
    axis_kernel = make_kernel(name, op, _split)
    copy_kernel = make_kernel(name, COPY, _split)

    def kernel(ctx, *gm):
        if isinstance(ctx.tiling, SplitTiling):
            return split_kernel(ctx, gm[0], gm[-1])
        if isinstance(ctx.tiling, IdentityTiling):
            return copy_kernel(ctx, *gm)
        return axis_kernel(ctx, *gm)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _split(gm):
    return gm[0], [], None, [gm[-1]]


for _name, _kind, _mean in (("ReduceSum", "sum", False), ("ReduceMax", "max", False),
                            ("ReduceMin", "min", False), ("ReduceMean", "sum", True)):
    _op: AxisOp = Reduce(_kind, _mean)
    register_kernel(KernelEntry(
        op=_name, kernel=_kernel(f"{_name[6:].lower()}_reduce_kernel", _op),
        tiling=_tiling(_op), dtypes=FLOATS, built_for_runtime=BUILT_FOR_RUNTIME,
        declines=_declines, tuning_space=TUNING_SPACE))

# ---- the model-family reductions, and the global pools (a reduction over the spatial dims)
FAMILY: dict[str, AxisOp] = {
    "ReduceProd": Reduce("prod"),
    "ReduceL1": Reduce("sum", pre="abs"),
    "ReduceL2": Reduce("sum", pre="square", post="sqrt"),
    "ReduceSumSquare": Reduce("sum", pre="square"),
    "ReduceLogSum": Reduce("sum", post="ln", empty=-np.inf),
    "ReduceLogSumExp": LogSumExp(),
}
for _name, _op in FAMILY.items():
    register_kernel(KernelEntry(
        op=_name, kernel=_kernel(f"{_name[6:].lower()}_reduce_kernel", _op),
        tiling=_tiling(_op, copies_identity=True), dtypes=FLOATS,
        built_for_runtime=BUILT_FOR_RUNTIME,
        declines=_declines, tuning_space=TUNING_SPACE))


def _spatial(ins, outs) -> frozenset:
    """A global pool's axes: every spatial dim of (N, C, D1, ...)."""
    shape = ins[0].shape
    return _canonical(shape, range(2, len(shape)))


for _name, _op in (("GlobalAveragePool", Reduce("sum", mean=True)),
                   ("GlobalMaxPool", Reduce("max"))):
    register_kernel(KernelEntry(
        op=_name, kernel=_kernel(f"global_{_name[6:-4].lower()}_pool_kernel", _op),
        tiling=_tiling(_op, _spatial), dtypes=FLOATS, built_for_runtime=BUILT_FOR_RUNTIME,
        declines=padded_storage, tuning_space=TUNING_SPACE))
