"""Native Softmax, LogSoftmax, LayerNormalization and RMSNormalization on the axis template.

Each op is its statistics and how they finish a tile; axis_kernel.py does the rest. Statistics
are float32 whatever the input (R13). Softmax subtracts the row max (clamped to the lowest
finite value, so a row of -inf shifts by a number and a long row split into segments never
computes -inf - -inf); segments merge as in online softmax. LayerNormalization centres each
tile on its own mean before squaring, and segments merge with Chan's formula, so a mean far
from zero costs no accuracy.

Each op is also a fusion anchor: its fused kernel runs the elementwise nodes before it (a
residual Add into LayerNormalization) and after it (a scaling after Softmax) on its tiles.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

import numpy as np

from ..ascend import lang as asc
from ..hixl.dtypes import FLOATS
from ..nixl import KernelEntry, TensorDesc, register_kernel
from .axis_fusion import fuse, make_fused_kernel
from .axis_kernel import AxisOp, make_kernel
from .axis_plan import TUNING_SPACE, padded_storage, plan
from .axis_ub import PLAIN
from .fusion_provider import FUSION
from .version import BUILT_FOR_RUNTIME

if TYPE_CHECKING:
    from .axis_kernel import Chain
    from .axis_layout import Tile


def _lowest(tile) -> float:
    return float(np.finfo(tile.cdt).min)


def _online_merge(tile, acc, seg, tmp, n_acc, n_seg) -> None:
    """(max, sum of exp(x - max)) of two segments: rescale both sums to the larger max."""
    (ma, sa), (mb, sb), n = acc, seg, tile.nstat
    asc.max(tmp, ma, mb, n)
    for m, s in ((ma, sa), (mb, sb)):
        asc.sub(m, m, tmp, n)
        asc.exp(m, m, n)
        asc.mul(s, s, m, n)
    asc.add(sa, sa, sb, n)
    asc.muls(ma, tmp, 1.0, n)


class Softmax(AxisOp):
    stats = 2
    pad = -np.inf

    aux_for_banks = True          # x - max goes beside x: no instruction reads and writes
    #                               one bank (a chip without published banks works in place)

    def needs_aux(self, layout: str) -> bool:
        return layout == "column"      # the column reduction must not overwrite x

    def first(self, tile: Tile, x: asc.LocalTensor, st: list, n: int) -> None:
        m, s = st
        tile.reduce("max", x, m)
        asc.maxs(m, m, _lowest(tile), tile.nstat)
        self.prepare(tile, x, st)
        tile.reduce("sum", x, s)

    merge = staticmethod(_online_merge)

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        asc.reciprocal(st[1], st[1], tile.nstat)

    def prepare(self, tile: Tile, x: asc.LocalTensor, st: list) -> None:
        """x = exp(x - max), through aux on a chip with UB banks: in place, each repeat would
        read and write the same banks [BANK2]. aux's pad lanes hold -inf, as x's do, so x's
        become exp(-inf) = 0."""
        if not tile.kernel.chip.ub_bank_groups:
            tile.apply(asc.sub, x, x, st[0])
            asc.exp(x, x, tile.size)
            return
        tile.fill_pads(tile.aux, self.pad, tile.count)
        tile.apply(asc.sub, tile.aux, x, st[0])
        asc.exp(x, tile.aux, tile.size)

    def finish(self, tile: Tile, dst: Chain, x: asc.LocalTensor, st: list) -> asc.LocalTensor:
        y = dst()
        tile.apply(asc.mul, y, x, st[1])
        return y


class LogSoftmax(AxisOp):
    stats = 2
    pad = -np.inf
    finish_reads = "aux"

    def needs_aux(self, layout: str) -> bool:
        return True                    # x - max goes beside x, which exp(x - max) overwrites

    def first(self, tile: Tile, x: asc.LocalTensor, st: list, n: int) -> None:
        m, s = st
        tile.reduce("max", x, m)
        asc.maxs(m, m, _lowest(tile), tile.nstat)
        self.prepare(tile, x, st)
        asc.exp(x, tile.aux, tile.size)
        tile.reduce("sum", x, s, keep=False)

    merge = staticmethod(_online_merge)

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        asc.ln(st[1], st[1], tile.nstat)

    def prepare(self, tile: Tile, x: asc.LocalTensor, st: list) -> None:
        """aux = x - max: in place, each repeat would read and write the same banks [BANK2].
        aux's pad lanes hold -inf, as x's do, so exp(x - max) is 0 there."""
        tile.fill_pads(tile.aux, self.pad, tile.count)
        tile.apply(asc.sub, tile.aux, x, st[0])

    def finish(self, tile: Tile, dst: Chain, x: asc.LocalTensor, st: list) -> asc.LocalTensor:
        y = dst()
        tile.apply(asc.sub, y, tile.aux, st[1])
        return y


def _inv_rms(tile, s, n) -> None:
    """s (a sum of squares over n elements) becomes 1 / sqrt(s / n + epsilon)."""
    asc.muls(s, s, 1.0 / n, tile.nstat)
    asc.adds(s, s, tile.tiling.epsilon, tile.nstat)
    asc.rsqrt(s, s, tile.nstat)


def _affine(tile, dst, y, scale, bias) -> asc.LocalTensor:
    """y * scale + bias along the row (either may be absent), each step into the next tile of
    the chain."""
    for fn, vec in ((asc.mul, scale), (asc.add, bias)):
        if vec is not None:
            out = dst()
            tile.scale(fn, out, y, vec)
            y = out
    return y


class LayerNorm(AxisOp):
    stats = 2                          # mean, then M2 (sum of squared deviations) -> inv_std
    params = 2                         # scale, bias
    finish_reads = "aux"
    stat_outputs = ((0, "float32"), (1, "float32"))
    empty = (np.nan, np.nan)

    def needs_aux(self, layout: str) -> bool:
        return True

    def first(self, tile: Tile, x: asc.LocalTensor, st: list, n: int) -> None:
        mean, m2 = st
        tile.reduce("sum", x, mean)
        asc.muls(mean, mean, 1.0 / n, tile.nstat)
        self.prepare(tile, x, st)
        asc.mul(x, tile.aux, tile.aux, tile.size)
        tile.reduce("sum", x, m2, keep=False)

    def merge(self, tile: Tile, acc: list, seg: list, tmp: asc.LocalTensor, n_acc: int,
              n_seg: int) -> None:
        """Chan et al.: mean += d * nb / n; M2 += M2b + d^2 * na * nb / n, d = mean_b - mean."""
        (ma, qa), (mb, qb), k = acc, seg, tile.nstat
        n = n_acc + n_seg
        asc.sub(tmp, mb, ma, k)
        asc.muls(mb, tmp, n_seg / n, k)
        asc.add(ma, ma, mb, k)
        asc.mul(tmp, tmp, tmp, k)
        asc.muls(tmp, tmp, n_acc * n_seg / n, k)
        asc.add(qa, qa, qb, k)
        asc.add(qa, qa, tmp, k)

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        _inv_rms(tile, st[1], n)

    def prepare(self, tile: Tile, x: asc.LocalTensor, st: list) -> None:
        """aux = x - mean (x is then free for the squares): in place, each repeat would read
        and write the same banks [BANK2]. aux's pad lanes hold 0, the sum's identity."""
        tile.fill_pads(tile.aux, 0.0, tile.count)
        tile.apply(asc.sub, tile.aux, x, st[0])

    def finish(self, tile: Tile, dst: Chain, x: asc.LocalTensor, st: list) -> asc.LocalTensor:
        y = dst()
        tile.apply(asc.mul, y, tile.aux, st[1])
        scale, bias = tile.params
        return _affine(tile, dst, y, scale, bias)


class RMSNorm(AxisOp):
    stats = 1
    params = 1                         # scale

    def needs_aux(self, layout: str) -> bool:
        return True

    def first(self, tile: Tile, x: asc.LocalTensor, st: list, n: int) -> None:
        asc.mul(tile.aux, x, x, tile.size)
        tile.reduce("sum", tile.aux, st[0], keep=False)

    def merge(self, tile: Tile, acc: list, seg: list, tmp: asc.LocalTensor, n_acc: int,
              n_seg: int) -> None:
        asc.add(acc[0], acc[0], seg[0], tile.nstat)

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        _inv_rms(tile, st[0], n)

    def finish(self, tile: Tile, dst: Chain, x: asc.LocalTensor, st: list) -> asc.LocalTensor:
        y = dst()
        tile.apply(asc.mul, y, x, st[0])
        scale, = tile.params
        return _affine(tile, dst, y, scale, None)


# ---- host side: which cases, which axes ----

def param_repeat(param: tuple, normalized: tuple) -> int | None:
    """How many copies of a parameter make one normalised row (1: it is the whole row), or None
    when it broadcasts inside the row (a size-1 dim before a full one)."""
    padded = (1,) * (len(normalized) - len(param)) + tuple(param)
    for k in range(len(normalized) + 1):
        if all(d == 1 for d in padded[:k]) and padded[k:] == normalized[k:]:
            return math.prod(normalized[:k])
    return None


def _axis(x: TensorDesc, attrs: dict) -> int:
    return attrs["axis"] % len(x.shape)


def _norm_declines(in_descs, attrs) -> str | None:
    x = in_descs[0]
    normalized = x.shape[_axis(x, attrs):]
    for d in in_descs[1:]:
        if d is not None and param_repeat(d.shape, normalized) is None:
            return (f"a parameter of shape {list(d.shape)} broadcasts inside the normalised "
                    f"shape {list(normalized)}; runs on the shim")
    return padded_storage(in_descs)


def _norm_tiling(op, fusion=PLAIN):
    def tiling(ins, outs, attrs, chip, config):
        x, axis = ins[0], _axis(ins[0], attrs)
        params = (list(ins[1:]) + [None] * op.params)[:op.params]
        repeats = tuple(1 if d is None else param_repeat(d.shape, x.shape[axis:]) for d in params)
        return plan(op, x, range(axis, len(x.shape)), chip, config, epsilon=attrs["epsilon"],
                    params=sum(d is not None for d in params), param_repeat=repeats,
                    fusion=fusion)
    return tiling


def _softmax_tiling(op, fusion=PLAIN):
    def tiling(ins, outs, attrs, chip, config):
        return plan(op, ins[0], {_axis(ins[0], attrs)}, chip, config, fusion=fusion)
    return tiling


def _register(name: str, kernel_name: str, op: AxisOp, tiling, split, declines) -> None:
    register_kernel(KernelEntry(
        op=name, kernel=make_kernel(kernel_name, op, split), tiling=tiling(op), dtypes=FLOATS,
        built_for_runtime=BUILT_FOR_RUNTIME, declines=declines, tuning_space=TUNING_SPACE))
    FUSION.add_anchor(name, _anchor(name, op, tiling))


def _anchor(name: str, op: AxisOp, tiling):
    """How the fusion provider builds `name`'s fused kernels (elementwise_ops._Fusion): the
    op writes y alone there, its x computed by the prologue or read as the kernel input."""
    y_only = copy.copy(op)
    y_only.stat_outputs = ()

    def build(kernel_name, program, at, args, attrs, in_descs, out) -> dict:
        fusion, reason = fuse(name, program, at, args, in_descs, out)
        op_tiling = tiling(y_only, fusion)

        def fused_tiling(ins, outs, _attrs, chip, config):
            own = [outs[0]] + [None if i is None else ins[i] for i in fusion.params]
            return op_tiling(own, outs, attrs, chip, config)

        return {"kernel": make_fused_kernel(kernel_name, y_only, fusion),
                "tiling": fused_tiling, "dtypes": FLOATS, "tuning_space": TUNING_SPACE,
                "declines": lambda descs, _attrs: reason}
    return build


def _split_norm(params: int, outputs: int):
    """(x, parameters, y, stat outputs) of gm = inputs given (trailing ones may be omitted),
    then the outputs."""
    def split(gm):
        ins, outs = gm[:len(gm) - outputs], gm[len(gm) - outputs:]
        return ins[0], (list(ins[1:]) + [None] * params)[:params], outs[0], outs[1:]
    return split


_register("Softmax", "softmax_kernel", Softmax(), _softmax_tiling, _split_norm(0, 1),
          padded_storage)
_register("LogSoftmax", "log_softmax_kernel", LogSoftmax(), _softmax_tiling, _split_norm(0, 1),
          padded_storage)
_register("LayerNormalization", "layer_norm_kernel", LayerNorm(), _norm_tiling,
          _split_norm(LayerNorm.params, 3), _norm_declines)
_register("RMSNormalization", "rms_norm_kernel", RMSNorm(), _norm_tiling,
          _split_norm(RMSNorm.params, 1), _norm_declines)
