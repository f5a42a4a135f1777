"""The device side of the reduce-along-an-axis template (reductions, Softmax, normalisations).

An op gives only what it computes along the axis (an AxisOp); the kernel moves tiles in and
out, pads and casts them, and runs the op on each unit: a unit whose reduced extent fits in UB
is resident (one tile: statistics, then the output), a longer one is streamed (a pass merging
per-segment statistics, then a pass writing the outputs). The layouts (axis_layout.py) reduce
along the axis and broadcast statistics back across it; statistics are vectors in UB with one
value per row or column, so merging and finishing them are ordinary count-form instructions.
Fused kernels (axis_fusion.py) subclass this one and override load and emit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..ascend import lang as asc
from ..hixl.dtypes import to_numpy
from ..intmath import round_up
from ..nixl import KernelContext
from .axis_layout import LAYOUTS, Segment, Tile, folded_offsets, outer_offset
from .axis_plan import AxisTiling, param_region
from .axis_ub import PLAIN, STAT_ITEMSIZE, Fusion, ub_plan
from .ub import convert, copy_rows, fill
from .ub_place import pad

if TYPE_CHECKING:
    from ..ascend.lang import LocalTensor


class AxisOp:
    """What an op computes along the reduced axis. Per unit the kernel calls `first` on each
    segment (merging with `merge` after the first), `finalize` once, then, for ops with an
    output of x's shape, `prepare` (streamed segments only: redo what `first` did to x, with the
    final statistics) and `finish`, whose steps write where `dst()` says (a Chain)."""

    stats = 1                 # statistics per unit
    params = 0                # parameter vectors along the row (scale, bias) the op takes
    pad = 0.0                 # pad lanes of a row hold this: the identity of the first reduction
    has_y = True              # an output of x's shape
    stat_outputs: tuple = ()  # (statistic, dtype; None = x's dtype) written once per unit
    empty: tuple = ()         # the stat outputs of an empty reduction
    aux_for_banks = False     # the scratch also on a chip with UB banks (out-of-place updates)
    finish_reads = "x"        # the tile `finish` starts from: "x", or "aux" (x is then free)

    def needs_aux(self, layout: str) -> bool:
        """Whether the op needs a tile-sized float scratch in this layout."""
        return False

    def first(self, tile: Tile, x: LocalTensor, st: list, n: int) -> None:
        raise NotImplementedError

    def merge(self, tile: Tile, acc: list, seg: list, tmp: LocalTensor, n_acc: int,
              n_seg: int) -> None:
        raise NotImplementedError

    def finalize(self, tile: Tile, st: list, n: int) -> None:
        pass

    def prepare(self, tile: Tile, x: LocalTensor, st: list) -> None:
        pass

    def finish(self, tile: Tile, dst: Chain, x: LocalTensor, st: list) -> LocalTensor:
        """y from the statistics, one step per dst() (1 + the parameters given); returns the
        tile holding it."""
        raise NotImplementedError


class Chain:
    """The tiles the steps of an op's finish write, in turn, as the UB plan placed them
    (axis_ub.finish_chain): dst() is the next one."""

    def __init__(self, kernel: AxisKernel, x: LocalTensor, y: LocalTensor) -> None:
        tiles = {"x": x, "aux": kernel.aux, "y": y}
        self._tiles = iter([tiles[t] for t in kernel.ub.chain])

    def __call__(self) -> LocalTensor:
        return next(self._tiles)


class StatOutputs:
    """The statistics outputs of the units (a reduction's result, LayerNorm's mean and
    inv_std): each unit's values converted into a slot of the stat queue and copied out."""

    def __init__(self, op: AxisOp, queue: asc.TQue, gm: list, sdt: np.dtype, cap: int) -> None:
        self.op, self.queue, self.gm, self.sdt, self.cap = op, queue, gm, sdt, cap

    def _regions(self, slot) -> list:
        """Each stat output's part of a stat-queue slot, in its own dtype."""
        regions = []
        for i, (_, dtype) in enumerate(self.op.stat_outputs):
            dt = self.sdt if dtype is None else np.dtype(dtype)
            regions.append(slot.reinterpret(dt)[i * self.cap * STAT_ITEMSIZE // dt.itemsize])
        return regions

    def copy_out(self, tile: Tile, st: list, out_off: int, count: int) -> None:
        if not self.op.stat_outputs:
            return
        slot = self.queue.alloc_tensor(np.float32)
        regions = self._regions(slot)
        for region, (i, _) in zip(regions, self.op.stat_outputs):
            convert(region, st[i], tile.nstat)
        self._flush(slot, regions, out_off, count)

    def copy_out_empty(self, start: int, count: int, rows: int) -> None:
        """An empty reduction: every unit's statistics are the op's values for the empty set."""
        for u0 in range(start, start + count, rows):
            n = min(rows, start + count - u0)
            slot = self.queue.alloc_tensor(np.float32)
            regions = self._regions(slot)
            for region, value in zip(regions, self.op.empty):
                fill(region, value, n)
            self._flush(slot, regions, u0, n)

    def _flush(self, slot, regions: list, out_off: int, count: int) -> None:
        self.queue.enque(slot)
        slot = self.queue.deque()
        for region, gm in zip(regions, self.gm):
            copy_rows(gm[out_off], region, 1, count, count, count)
        self.queue.free_tensor(slot)


class AxisKernel:
    """One block of an axis kernel: its pipe, queues and buffers, and the unit loop."""

    def __init__(self, ctx: KernelContext, op: AxisOp, xs: list, params: list,
                 y: asc.GlobalTensor | None, stat_outs: list, fusion: Fusion = PLAIN) -> None:
        """Init: every buffer of the UB plan. `xs`: the GM tensors loaded as tiles (x, or a
        fusion's prologue inputs); `params`: the parameter vectors (None: omitted)."""
        tiling: AxisTiling = ctx.tiling
        self.ctx, self.tiling, self.op, self.chip = ctx, tiling, op, ctx.chip
        self.layout = LAYOUTS[tiling.layout]
        self.xs, self.y, self.param_src = xs, y, params
        self.fusion = fusion
        self.sdt, self.cdt = to_numpy(tiling.dtype), to_numpy(tiling.compute_dtype)
        self.widen = self.sdt != self.cdt
        self.blk = self.chip.block_elems(self.cdt.itemsize)
        self.step = max(self.blk, self.chip.block_elems(self.sdt.itemsize))
        self.ub = ub = ub_plan(op, tiling.layout, tiling.rows, tiling.pitch, self.sdt.itemsize,
                               self.cdt.itemsize, tiling.config.buffers, tiling.params,
                               not tiling.resident, self.chip, fusion,
                               self.chip.ub_bytes // tiling.config.divisor)
        self.span = fusion.span(tiling.rows * tiling.pitch, self.chip)
        self.pipe = asc.TPipe()
        self.in_q = self._alloc("in_slot", asc.TPosition.VECIN)
        self.out_q = self._alloc("out_slot", asc.TPosition.VECOUT)
        self.stats_out = StatOutputs(op, self._alloc("stat_slot", asc.TPosition.VECOUT),
                                     stat_outs, self.sdt, ub.cap)
        self.work, self.aux, red0, red1, stats, self.bc, *pars = (
            self._alloc(name) for name in ("work", "aux", "red0", "red1", "stats", "bc",
                                           "param0", "param1"))
        self.red = (red0, red1)
        self.slots = [stats[i * ub.cap] for i in range(ub.slots)] if stats is not None else []
        present = [i for i, g in enumerate(params) if g is not None]
        self.param_tensors: list[LocalTensor | None] = [None] * len(params)
        for j, i in enumerate(present):
            self.param_tensors[i] = pars[j]
        self._held = None

    def _alloc(self, name: str, position=None):
        """The plan's buffer `name` after its gap: a queue at `position`, else scratch in the
        compute dtype; None when it has no bytes."""
        nbytes = self.ub.named()[name]
        if not nbytes:
            return None
        pad(self.pipe, self.ub.gap(name))
        target = asc.TQue(position) if position else asc.TBuf()
        self.pipe.init_buffer(target, self.tiling.config.buffers if position else 1, nbytes)
        return target.get(self.cdt) if isinstance(target, asc.TBuf) else target

    # ---- the unit loop ----
    def process(self) -> None:
        tiling = self.tiling
        start = self.ctx.block_idx * tiling.per_core
        count = min(tiling.per_core, tiling.units - start)
        if tiling.length == 0:
            self.stats_out.copy_out_empty(start, count, tiling.rows)
            return
        if any(r > 1 for r in tiling.param_repeat):
            self.expand_params()
        if tiling.resident and tiling.layout == "row":     # whole rows, many to a tile
            if any(g is not None for g in self.param_src):
                self.load_params(Tile(self, 1, tiling.length), 0)
            for u0 in range(start, start + count, tiling.rows):
                n = min(tiling.rows, start + count - u0)
                seg = Segment(outer_offset(tiling, u0), n, tiling.length, tiling.length, 0)
                self.resident_unit(seg, u0, n)
            return
        for u in range(start, start + count):
            base, out_off, width = self.layout.unit(tiling, u)
            segs = self.layout.segments(tiling, folded_offsets(tiling, base), width)
            if tiling.resident:
                self.resident_unit(segs[0], out_off, width)
            else:
                self.streamed_unit(segs, out_off, width)

    def resident_unit(self, seg: Segment, out_off: int, out_count: int) -> None:
        """The whole reduced extent in one tile: statistics, then y from the same tile."""
        op = self.op
        tile = Tile(self, seg.rows, seg.count)
        st = self.slots[:op.stats]
        x = self.load(tile, seg)
        op.first(tile, x, st, tile.n)
        op.finalize(tile, st, tile.n)
        self.stats_out.copy_out(tile, st, out_off, out_count)
        self.emit(tile, x, st, seg)

    def streamed_unit(self, segs: list[Segment], out_off: int, out_count: int) -> None:
        """Longer than UB: merge per-segment statistics, then reload each segment for y."""
        op, k = self.op, self.op.stats
        acc, seg_st, tmp = self.slots[:k], self.slots[k:2 * k], self.slots[2 * k]
        n_acc = 0
        for seg in segs:
            tile = Tile(self, seg.rows, seg.count)
            x = self.load(tile, seg)
            op.first(tile, x, seg_st if n_acc else acc, tile.n)
            if n_acc:
                op.merge(tile, acc, seg_st, tmp, n_acc, tile.n)
            self.release()
            n_acc += tile.n
        op.finalize(tile, acc, n_acc)
        self.stats_out.copy_out(tile, acc, out_off, out_count)
        if not op.has_y:
            return
        for seg in segs:
            tile = Tile(self, seg.rows, seg.count)
            self.load_params(tile, seg.pos)
            x = self.load(tile, seg)
            op.prepare(tile, x, acc)
            self.emit(tile, x, acc, seg)

    # ---- x in ----
    def copy_in(self, tile: Tile, seg: Segment) -> None:
        """The segment of every tiled input, side by side in one slot; the copy pads each
        row's last block with the op's identity (row layout)."""
        slot = self.in_q.alloc_tensor(self.sdt)
        for k, src in enumerate(self.xs):
            copy_rows(slot[k * self.ub.in_stride], src[seg.offset], seg.rows, seg.count,
                      seg.gm_pitch, tile.pitch, self.layout.copy_pad(self.op))
        self.in_q.enque(slot)

    def load(self, tile: Tile, seg: Segment) -> LocalTensor:
        """The tile of x in UB, in the compute dtype, pad lanes holding the op's identity."""
        self.copy_in(tile, seg)
        slot = self.in_q.deque()
        tile.fill_pads(slot, self.op.pad, round_up(tile.count,
                                                   self.chip.block_elems(slot.itemsize)))
        if not self.widen:
            self._held = slot
            return slot
        convert(self.work, slot, tile.size)
        self.in_q.free_tensor(slot)
        return self.work

    def release(self) -> None:
        """Free the input slot x was read in place from."""
        if self._held is not None:
            self.in_q.free_tensor(self._held)
            self._held = None

    # ---- y out ----
    def emit(self, tile: Tile, x: LocalTensor, st: list, seg: Segment) -> None:
        if not self.op.has_y:
            self.release()
            return
        y = self.out_q.alloc_tensor(self.sdt)
        result = self.finish(tile, y, x, st)
        if result is not y:
            convert(y, result, tile.size)
        self.out_q.enque(y)
        self.release()
        self.copy_out(tile, seg)

    def finish(self, tile: Tile, y: LocalTensor, x: LocalTensor, st: list) -> LocalTensor:
        """The op's output: into y, or anywhere in the compute dtype when a conversion to y
        follows."""
        return self.op.finish(tile, Chain(self, x, y), x, st)

    def copy_out(self, tile: Tile, seg: Segment) -> None:
        assert self.y is not None                   # an op with an output of x's shape
        y = self.out_q.deque()
        copy_rows(self.y[seg.offset], y, seg.rows, seg.count, seg.gm_pitch, tile.pitch)
        self.out_q.free_tensor(y)

    # ---- parameters (scale, bias) along the normalised row ----
    def load_params(self, tile: Tile, pos: int) -> None:
        for src, dst in zip(self.param_src, self.param_tensors):
            if src is None or dst is None:          # dst: the UB row of each src given
                continue
            p = self.in_q.alloc_tensor(self.sdt)
            copy_rows(p, src[pos], 1, tile.count, tile.count, tile.pitch, 0.0)
            self.in_q.enque(p)
            p = self.in_q.deque()
            convert(dst, p, tile.pitch)
            self.in_q.free_tensor(p)

    def expand_params(self) -> None:
        """Parameters that broadcast over the normalised row: write the row-long copy into this
        core's part of the workspace, then read it from there like a full-length parameter."""
        tiling, ws, isz = self.tiling, self.ctx.planned_workspace, self.sdt.itemsize
        most = self.ub.in_slot // isz // self.step * self.step
        for i, (src, repeat) in enumerate(zip(self.param_src, tiling.param_repeat)):
            if src is None or repeat == 1:
                continue
            n = tiling.length // repeat
            region = ws.addr + param_region(tiling, self.ctx.block_idx, i, isz, self.chip)
            dst = asc.GlobalTensor(ws.gm, region, self.sdt, tiling.length, "workspace",
                                   root=ws.root)
            for c0 in range(0, n, most):
                c = min(most, n - c0)
                p = self.in_q.alloc_tensor(self.sdt)
                copy_rows(p, src[c0], 1, c, c, round_up(c, self.step), 0.0)
                asc.set_flag(asc.HardEvent.MTE2_MTE3)
                asc.wait_flag(asc.HardEvent.MTE2_MTE3)
                for k in range(repeat):
                    copy_rows(dst[k * n + c0], p, 1, c, c, round_up(c, self.step))
                asc.set_flag(asc.HardEvent.MTE3_MTE2)
                asc.wait_flag(asc.HardEvent.MTE3_MTE2)
                self.in_q.free_tensor(p)
            self.param_src[i] = dst


def make_kernel(name: str, op: AxisOp, split: Callable) -> Callable[..., None]:
    """The device kernel: `split(gm)` names x, the parameters, y and the stat outputs among the
    kernel's GM tensors (the schema's inputs, then its outputs)."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        x, params, y, stat_outs = split(gm)
        AxisKernel(ctx, op, [x], list(params), y, list(stat_outs)).process()

    kernel.__name__ = kernel.__qualname__ = name
    return kernel
