"""The device side of the reduce-along-an-axis template (reductions, Softmax, normalisations).

An op gives only what it computes along the axis (an AxisOp); this module moves tiles in and
out, pads and casts them, reduces along the axis and broadcasts statistics back across it, and
merges statistics over segments when a unit is longer than UB (see axis_plan.py for the
layouts). Statistics are vectors in UB with one value per row (row layout) or per column
(column layout), so merging and finishing them are ordinary count-form vector instructions.

A fused kernel (axis_plan.Fusion) loads the prologue's inputs segment by segment as it would
x, side by side in one queue slot, runs their elementwise bodies (elementwise_ops.BODIES, in
the compute dtype) into the tile of x and puts the op's identity back in its pad lanes; the
epilogue's bodies run on the finished tile before it is converted and copied out. Streamed
segments recompute the prologue on each pass, as they reload x.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..ascend import lang as asc
from ..hixl.dtypes import to_numpy
from ..nixl import KernelContext
from .axis_plan import (PLAIN, STAT_ITEMSIZE, AxisTiling, Fusion, param_region, reduce_steps,
                        row_pitch, ub_plan)
from .elementwise import BodyArgs, read_scalars, resolve_program

# kind -> (block reduction, whole-repeat reduction, elementwise combination)
REDUCERS = {
    "sum": (asc.block_reduce_sum, asc.whole_reduce_sum, asc.add),
    "max": (asc.block_reduce_max, asc.whole_reduce_max, asc.max),
    "min": (asc.block_reduce_min, asc.whole_reduce_min, asc.min),
}


class AxisOp:
    """What an op computes along the reduced axis. Per unit the driver calls `first` on each
    segment (merging with `merge` after the first), `finalize` once, then, for ops with an
    output of x's shape, `prepare` (streamed segments only: redo what `first` did to x, with the
    final statistics) and `finish`."""

    stats = 1                 # statistics per unit
    params = 0                # parameter vectors along the row (scale, bias) the op takes
    pad = 0.0                 # pad lanes of a row hold this: the identity of the first reduction
    has_y = True              # an output of x's shape
    stat_outputs: tuple = ()  # (statistic, dtype; None = x's dtype) written once per unit
    empty: tuple = ()         # the stat outputs of an empty reduction

    def needs_aux(self, layout: str) -> bool:
        """Whether the op needs a tile-sized float scratch in this layout."""
        return False

    def first(self, t: Tile, x, st: list, n: int) -> None:
        raise NotImplementedError

    def merge(self, t: Tile, acc: list, seg: list, tmp, n_acc: int, n_seg: int) -> None:
        raise NotImplementedError

    def finalize(self, t: Tile, st: list, n: int) -> None:
        pass

    def prepare(self, t: Tile, x, st: list) -> None:
        pass

    def finish(self, t: Tile, y, x, st: list) -> None:
        pass


def chunks(total: int, limit: int, unit_bytes: int, block_bytes: int):
    """(start, n) pieces of `total` units, n <= limit, each start on a block boundary."""
    step = block_bytes // math.gcd(block_bytes, unit_bytes)
    size = max(step, limit // step * step)
    for start in range(0, total, size):
        yield start, min(size, total - start)


def convert(dst: asc.LocalTensor, src: asc.LocalTensor, count: int) -> None:
    """dst = src in dst's dtype: a copy, an exact widening, or a round to nearest even."""
    if dst.dtype == src.dtype:
        asc.muls(dst, src, 1.0, count)
    elif dst.itemsize > src.itemsize:
        asc.cast(dst, src, asc.RoundMode.CAST_NONE, count)
    else:
        asc.cast(dst, src, asc.RoundMode.CAST_RINT, count)


def as_bits(dst: asc.LocalTensor, value):
    """dst's same-width integer view and `value`'s bits in it: a fill that works for any
    storage type (bfloat16 has no vector arithmetic, its bits do)."""
    bits = {2: np.int16, 4: np.int32}[dst.itemsize]
    return dst.reinterpret(bits), np.array(value, dst.dtype).view(bits).item()


def fill(dst: asc.LocalTensor, value, count: int) -> None:
    """Duplicate a value of dst's dtype."""
    asc.duplicate(*as_bits(dst, value), count)


def copy_rows(dst, src, rows: int, count: int, gm_pitch: int, ub_pitch: int,
              pad: float | None = None) -> None:
    """`rows` rows of `count` elements between GM (rows `gm_pitch` apart) and UB (`ub_pitch`
    apart, each row padded to a block with `pad`, or its first element when None)."""
    local = dst if isinstance(dst, asc.LocalTensor) else src
    inbound = local is dst
    chip, isz = local.core.chip, local.itemsize
    nbytes = count * isz
    contiguous = rows == 1 or count == gm_pitch == ub_pitch
    if contiguous and rows * nbytes % chip.block_bytes == 0:
        asc.data_copy(dst, src, rows * count)        # one burst, whole blocks
        return
    ub_gap = (ub_pitch * isz - -(-nbytes // chip.block_bytes) * chip.block_bytes) \
        // chip.block_bytes
    gm_gap = (gm_pitch - count) * isz
    right = (-nbytes % chip.block_bytes) // isz
    padding = asc.DataCopyPadExtParams(True, 0, right, pad) if inbound and pad is not None \
        else None
    for r0, n in chunks(rows, chip.max_copy_blocks, chip.block_bytes, chip.block_bytes):
        params = asc.DataCopyExtParams(n, nbytes, gm_gap if inbound else ub_gap,
                                       ub_gap if inbound else gm_gap)
        if inbound:
            asc.data_copy_pad(dst[r0 * ub_pitch], src[r0 * gm_pitch], params, padding)
        else:
            asc.data_copy_pad(dst[r0 * gm_pitch], src[r0 * ub_pitch], params)


def rowwise(fn, dst, src0, src1, rows: int, pitch: int, count: int, per_row: bool) -> None:
    """dst[r, :count] = fn(src0[r, :count], b) for each of `rows` rows `pitch` apart, where b is
    block r of src1 broadcast (per_row) or the vector src1 itself. Lanes past `count` keep their
    value. Issued across rows (one instruction per repeat-wide column chunk) or row by row,
    whichever takes fewer instructions."""
    chip, isz = dst.core.chip, dst.itemsize
    lanes, blk = chip.lanes(isz), chip.block_elems(isz)
    per_rep, most = chip.repeat_bytes // chip.block_bytes, chip.max_repeat
    full, tail = divmod(count, lanes)
    across = -(-count // lanes) * -(-rows // most)
    by_row = rows * (-(-full // most) + (tail > 0))
    stride = pitch // blk
    if stride <= most and across <= by_row:           # repeat strides are u8 fields
        p = asc.BinaryRepeatParams(1, 1, 0 if per_row else 1, stride, stride, int(per_row))
        for r0, n in chunks(rows, most, pitch * isz, chip.block_bytes):
            for j in range(-(-count // lanes)):
                o = r0 * pitch + j * lanes
                b = src1[r0 * blk] if per_row else src1[j * lanes]
                fn(dst[o], src0[o], b, min(lanes, count - j * lanes), n, p)
        return
    p = asc.BinaryRepeatParams(1, 1, 0 if per_row else 1, per_rep, per_rep,
                               0 if per_row else per_rep)
    pieces = [(j0, lanes, n) for j0, n in chunks(full, most, lanes * isz, chip.block_bytes)]
    if tail:
        pieces.append((full, tail, 1))
    for r in range(rows):
        for j0, mask, n in pieces:
            o = r * pitch + j0 * lanes
            fn(dst[o], src0[o], src1[r * blk] if per_row else src1[j0 * lanes], mask, n, p)


class Tile:
    """`rows` rows of `count` elements in UB (compute dtype) at the layout's pitch, with the
    reductions and broadcasts along the reduced axis."""

    def __init__(self, k: AxisKernel, rows: int, count: int):
        t = k.t
        self.k, self.rows, self.count = k, rows, count
        self.row = t.layout == "row"
        self.pitch = (row_pitch(count, k.chip, k.sdt.itemsize, k.cdt.itemsize) if self.row
                      else -(-count // k.step) * k.step)
        self.size = rows * self.pitch
        self.n = count if self.row else rows          # elements behind each statistic
        self.nstat = rows if self.row else self.pitch
        self.aux = k.aux
        self.params = k.param_tensors
        self.tiling: AxisTiling = t

    def reduce(self, kind: str, src, dst, keep: bool = True) -> None:
        """dst = the `kind` reduction of src along the axis; `keep=False` lets the column
        layout reduce in place."""
        if self.row:
            self._reduce_rows(kind, src, dst)
        else:
            self._reduce_columns(kind, src, dst, self.aux if keep else src)

    def apply(self, fn, dst, src, stat) -> None:
        """dst = fn(src, stat) with the statistics broadcast along the axis (valid lanes only,
        so row pads keep the identity the next reduction needs)."""
        if self.row:
            k = self.k
            per = k.chip.repeat_bytes // k.chip.block_bytes
            for r0, n in chunks(-(-self.rows // per), k.chip.max_repeat, per * stat.itemsize,
                                k.chip.block_bytes):
                asc.brcb(k.bc[r0 * per * k.blk], stat[r0 * per], n)
            rowwise(fn, dst, src, k.bc, self.rows, self.pitch, self.count, per_row=True)
        else:
            rowwise(fn, dst, src, stat, self.rows, self.pitch, self.pitch, per_row=False)

    def fill_pads(self, x, value, start: int) -> None:
        """Lanes [start, pitch) of every row hold `value` (any storage type, see `as_bits`): a
        bit-masked duplicate for the block `start` falls in, then one for the whole blocks
        after it."""
        chip = self.k.chip
        x, word = as_bits(x, value)
        blk = chip.block_elems(x.itemsize)
        head, body = start // blk * blk, -(-start // blk) * blk
        if head < start:
            self._across_rows(x, head, word, ((1 << blk) - (1 << (start - head)), 0))
        if body < self.pitch:
            self._across_rows(x, body, word, self.pitch - body)

    def _across_rows(self, x, offset, word, mask) -> None:
        """Duplicate `word` into the lanes `mask` selects (an int: the first lanes) from
        `offset` on in every row: one repeat per row where the row stride fits the repeat
        field and the lanes one repeat, else row by row."""
        chip = self.k.chip
        stride = self.pitch // chip.block_elems(x.itemsize)
        if stride <= chip.max_repeat and not (isinstance(mask, int)
                                              and mask > chip.lanes(x.itemsize)):
            for r0, n in chunks(self.rows, chip.max_repeat, self.pitch * x.itemsize,
                                chip.block_bytes):
                asc.duplicate(x[r0 * self.pitch + offset], word, mask, n, 1, stride)
            return
        for r in range(self.rows):
            if isinstance(mask, int):
                asc.duplicate(x[r * self.pitch + offset], word, mask)    # count form
            else:
                asc.duplicate(x[r * self.pitch + offset], word, mask, 1)

    def scale(self, fn, dst, src, vec) -> None:
        """dst = fn(src, vec) with one vector along the row for every row (row layout)."""
        rowwise(fn, dst, src, vec, self.rows, self.pitch, self.count, per_row=False)

    def _reduce_rows(self, kind, src, dst) -> None:
        """Block reductions while rows are whole repeats, a fold of the remaining repeats into
        one, then one whole-repeat reduction per row."""
        block_fn, whole_fn, combine = REDUCERS[kind]
        k = self.k
        chip, isz, bb = k.chip, src.itemsize, k.chip.block_bytes
        lanes, blk, most = chip.lanes(isz), chip.block_elems(isz), chip.max_repeat
        per_rep = chip.repeat_bytes // bb
        steps, fold, _ = reduce_steps(self.pitch, chip, isz)
        cur, v, regions = src, self.pitch, k.red
        for i in range(steps):
            out = regions[i % 2]
            for r0, n in chunks(self.rows * v // lanes, most, per_rep * isz, bb):
                block_fn(out[r0 * per_rep], cur[r0 * lanes], lanes, n)
            cur, v = out, v // blk
        if fold:
            acc = regions[steps % 2]
            stride = v // blk
            copy = asc.UnaryRepeatParams(1, 1, per_rep, stride)
            step = asc.BinaryRepeatParams(1, 1, 1, per_rep, per_rep, stride)
            for r0, n in chunks(self.rows, most, lanes * isz, bb):
                a, c = acc[r0 * lanes], cur[r0 * v]
                asc.muls(a, c, 1.0, lanes, n, copy)
                for j in range(1, -(-v // lanes)):
                    combine(a, a, c[j * lanes], min(lanes, v - j * lanes), n, step)
            cur, v = acc, lanes
        for r0, n in chunks(self.rows, most, isz, bb):
            whole_fn(dst[r0], cur[r0 * v], v, n, 1, 1, v // blk)

    def _reduce_columns(self, kind, src, dst, scratch) -> None:
        """Halve the rows until one is left: rows [0, h) combine with [h, 2h), an odd last row
        joins row 0."""
        combine = REDUCERS[kind][2]
        p, n, cur = self.pitch, self.rows, src
        if n == 1:
            asc.muls(dst, src, 1.0, p)
        while n > 1:
            h = n // 2
            out = dst if h == 1 else scratch
            combine(out, cur, cur[h * p], h * p)
            if n % 2:
                combine(out, out, cur[2 * h * p], p)
            cur, n = out, h


class Segment(NamedTuple):
    offset: int      # GM element offset of the first row
    rows: int
    count: int       # elements per row
    gm_pitch: int    # GM elements between rows
    pos: int         # position along the normalised row (parameters follow it)


class AxisKernel:
    """One block of an axis kernel: its pipe, queues and buffers, and the unit loop."""

    def __init__(self, ctx: KernelContext, op: AxisOp, xs: list, params: list, y,
                 stat_outs: list, fusion: Fusion = PLAIN, inputs: tuple = ()):
        """`xs`: the GM tensors loaded as tiles (x, or the prologue's inputs); `inputs`: the
        kernel's inputs by value id (a fusion reads its scalars from them)."""
        t: AxisTiling = ctx.tiling
        self.ctx, self.t, self.op, self.chip = ctx, t, op, ctx.chip
        self.xs, self.y, self.stat_outs = xs, y, stat_outs
        self.param_src = params
        self.fusion = fusion
        self.sdt, self.cdt = to_numpy(t.dtype), to_numpy(t.compute_dtype)
        self.widen = self.sdt != self.cdt
        self.blk = self.chip.block_elems(self.cdt.itemsize)
        self.step = max(self.blk, self.chip.block_elems(self.sdt.itemsize))
        ub = ub_plan(op, t.layout, t.rows, t.pitch, self.sdt.itemsize, self.cdt.itemsize,
                     t.buffer_num, t.params, not t.resident, self.chip, fusion)
        self.ub = ub
        self.span = fusion.span(t.rows * t.pitch, self.chip)
        pipe = asc.TPipe()
        self.in_q = self._queue(pipe, asc.TPosition.VECIN, ub.in_slot)
        self.out_q = self._queue(pipe, asc.TPosition.VECOUT, ub.out_slot)
        self.stat_q = self._queue(pipe, asc.TPosition.VECOUT, ub.stat_slot)
        self.work, self.aux, red0, red1, stats, self.bc, par = (
            self._buf(pipe, n) for n in (ub.work, ub.aux, *ub.red, ub.stats, ub.bc, ub.params))
        self.red = (red0, red1)
        self.slots = [stats[i * ub.cap] for i in range(ub.slots)] if stats is not None else []
        present = [i for i, g in enumerate(params) if g is not None]
        self.param_tensors = [None] * len(params)
        for j, i in enumerate(present):
            self.param_tensors[i] = par[j * t.pitch]
        self._held = None
        self._init_bodies(pipe, inputs)

    def _init_bodies(self, pipe, inputs: tuple) -> None:
        """A fusion's buffers, carved from one in the order Fusion.buffers counts them; its
        scalars read and spread once per block; its programs resolved."""
        f = self.fusion
        counts = f.buffers(self.widen)
        bodies = self._buf(pipe, self.ub.bodies)
        tiles = iter([bodies[k * self.span] for k in range(sum(counts))])
        self.converted, self.results, self.temps, consts = (
            [next(tiles) for _ in range(c)] for c in counts)
        values = read_scalars(pipe, self.chip, {i: inputs[i] for i in f.scalars})
        self.base = [None] * len(inputs)         # per kernel input: its tile, if a body reads one
        for buf, i in zip(consts, f.consts):
            asc.duplicate(buf, values[i], self.span)
            self.base[i] = buf
        self.prologue = resolve_program(f.prologue, values)
        self.epilogue = resolve_program(f.epilogue, values)

    def _run_steps(self, program: list, values: list, tile: Tile, last):
        """Run a program's bodies over the whole tile (pad lanes too); each result goes to the
        next result buffer, the last to `last` (None: a result buffer too). A chain's step
        reads only its predecessor's result, so two buffers in turn suffice."""
        lanes = self.chip.repeat_bytes // 2
        nv = -(-tile.size // lanes) * lanes
        for j, (fn, args, attrs) in enumerate(program):
            out = last if j == len(program) - 1 and last is not None else self.results[j % 2]
            fn(BodyArgs(out, [values[a] for a in args], self.temps, tile.size, nv, attrs))
            values.append(out)
        return values[-1]

    def _queue(self, pipe, position, nbytes):
        if not nbytes:
            return None
        q = asc.TQue(position)
        pipe.init_buffer(q, self.t.buffer_num, nbytes)
        return q

    def _buf(self, pipe, nbytes):
        if not nbytes:
            return None
        b = asc.TBuf()
        pipe.init_buffer(b, nbytes)
        return b.get(self.cdt)

    # ---- the unit loop ----
    def run(self) -> None:
        t = self.t
        start = self.ctx.block_idx * t.per_core
        count = min(t.per_core, t.units - start)
        if t.length == 0:
            self._fill_empty(start, count)
            return
        if any(r > 1 for r in t.param_repeat):
            self._expand_params()
        if t.resident and t.layout == "row":
            if any(g is not None for g in self.param_src):
                self._load_params(Tile(self, 1, t.length), 0)
            for u0 in range(start, start + count, t.rows):
                n = min(t.rows, start + count - u0)
                seg = Segment(self._outer_offset(u0), n, t.length, t.length, 0)
                self._resident(seg, u0, n)
            return
        for u in range(start, start + count):
            segs, out_off, width = self._segments(u)
            if t.resident:
                self._resident(segs[0], out_off, width)
            else:
                self._stream(segs, out_off, width)

    def _resident(self, seg: Segment, out_off: int, out_count: int) -> None:
        op = self.op
        tile = Tile(self, seg.rows, seg.count)
        st = self.slots[:op.stats]
        x = self._load(tile, seg)
        op.first(tile, x, st, tile.n)
        op.finalize(tile, st, tile.n)
        self._emit_stats(tile, st, out_off, out_count)
        self._emit_y(tile, x, st, seg)

    def _stream(self, segs: list[Segment], out_off: int, out_count: int) -> None:
        op, k = self.op, self.op.stats
        acc, seg_st, tmp = self.slots[:k], self.slots[k:2 * k], self.slots[2 * k]
        n_acc = 0
        for seg in segs:
            tile = Tile(self, seg.rows, seg.count)
            x = self._load(tile, seg)
            op.first(tile, x, seg_st if n_acc else acc, tile.n)
            if n_acc:
                op.merge(tile, acc, seg_st, tmp, n_acc, tile.n)
            self._release()
            n_acc += tile.n
        op.finalize(tile, acc, n_acc)
        self._emit_stats(tile, acc, out_off, out_count)
        if not op.has_y:
            return
        for seg in segs:
            tile = Tile(self, seg.rows, seg.count)
            self._load_params(tile, seg.pos)
            x = self._load(tile, seg)
            op.prepare(tile, x, acc)
            self._emit_y(tile, x, acc, seg)

    # ---- where units live ----
    def _outer_offset(self, o: int) -> int:
        off = 0
        for size, stride in reversed(self.t.kept):
            o, i = divmod(o, size)
            off += i * stride
        return off

    def _segments(self, u: int) -> tuple[list[Segment], int, int]:
        """The segments of unit u, and where its statistics go (offset, count)."""
        t = self.t
        if t.layout == "row":
            base, out_off, width = self._outer_offset(u), u, 1
        else:
            chunks_per_outer = -(-t.inner // t.width)
            o, c = divmod(u, chunks_per_outer)
            j0 = c * t.width
            base, out_off = self._outer_offset(o) + j0, o * t.inner + j0
            width = min(t.width, t.inner - j0)
        segs = []
        for combo in itertools.product(*(range(s) for s, _ in t.folded)):
            off = base + sum(i * stride for i, (_, stride) in zip(combo, t.folded))
            if t.layout == "row":
                segs += [Segment(off + s0, 1, n, n, s0) for s0 in range(0, t.length, t.segment)
                         for n in [min(t.segment, t.length - s0)]]
            else:
                segs += [Segment(off + c0 * t.inner, min(t.rows, t.length - c0), width,
                                 t.inner, 0) for c0 in range(0, t.length, t.rows)]
        return segs, out_off, width

    # ---- moving tiles ----
    def _load(self, tile: Tile, seg: Segment):
        """Copy a segment of x in (pad lanes hold the op's identity: the copy pads its last
        block, the rest of the pitch is filled) and widen it to the compute dtype; a fusion
        copies its prologue's inputs instead, side by side. Returns the tile of x in UB."""
        slot = self.in_q.alloc_tensor(self.sdt)
        for k, src in enumerate(self.xs):
            copy_rows(slot[k * self.span], src[seg.offset], seg.rows, seg.count, seg.gm_pitch,
                      tile.pitch, self.op.pad if tile.row else None)
        self.in_q.enque(slot)
        slot = self.in_q.deque()
        if self.prologue:
            return self._run_prologue(tile, slot)
        if tile.row:
            blk = self.chip.block_elems(slot.itemsize)
            tile.fill_pads(slot, self.op.pad, -(-tile.count // blk) * blk)
        if not self.widen:
            self._held = slot
            return slot
        convert(self.work, slot, tile.size)
        self.in_q.free_tensor(slot)
        return self.work

    def _run_prologue(self, tile: Tile, slot):
        """x computed from the prologue's input tiles; its pad lanes get the op's identity
        back, as bodies leave anything there."""
        values = list(self.base)
        for k, i in enumerate(self.fusion.tiles):
            values[i] = slot[k * self.span]
            if self.widen:
                convert(self.converted[k], values[i], tile.size)
                values[i] = self.converted[k]
        x = self._run_steps(self.prologue, values, tile, self.work)
        self.in_q.free_tensor(slot)
        if tile.row:
            tile.fill_pads(x, self.op.pad, tile.count)
        return x

    def _release(self) -> None:
        if self._held is not None:
            self.in_q.free_tensor(self._held)
            self._held = None

    def _emit_y(self, tile: Tile, x, st: list, seg: Segment) -> None:
        if not self.op.has_y:
            self._release()
            return
        y = self.out_q.alloc_tensor(self.sdt)
        result = y if not (self.widen or self.epilogue) else x
        self.op.finish(tile, result, x, st)
        if self.epilogue:
            values = self.base + [None] * len(self.prologue) + [result]
            result = self._run_steps(self.epilogue, values, tile, None if self.widen else y)
        if result is not y:
            convert(y, result, tile.size)
        self.out_q.enque(y)
        self._release()
        y = self.out_q.deque()
        copy_rows(self.y[seg.offset], y, seg.rows, seg.count, seg.gm_pitch, tile.pitch)
        self.out_q.free_tensor(y)

    def _stat_regions(self, slot) -> list:
        """Each stat output's part of a stat-queue slot, in its own dtype."""
        regions = []
        for i, (_, dtype) in enumerate(self.op.stat_outputs):
            dt = self.sdt if dtype is None else np.dtype(dtype)
            regions.append(slot.reinterpret(dt)[i * self.ub.cap * STAT_ITEMSIZE // dt.itemsize])
        return regions

    def _emit_stats(self, tile: Tile, st: list, out_off: int, count: int) -> None:
        if not self.op.stat_outputs:
            return
        slot = self.stat_q.alloc_tensor(np.float32)
        regions = self._stat_regions(slot)
        for region, (i, _) in zip(regions, self.op.stat_outputs):
            convert(region, st[i], tile.nstat)
        self._flush_stats(slot, regions, out_off, count)

    def _flush_stats(self, slot, regions: list, out_off: int, count: int) -> None:
        self.stat_q.enque(slot)
        slot = self.stat_q.deque()
        for region, gm in zip(regions, self.stat_outs):
            copy_rows(gm[out_off], region, 1, count, count, count)
        self.stat_q.free_tensor(slot)

    def _fill_empty(self, start: int, count: int) -> None:
        """An empty reduction: every unit's statistics are the op's values for the empty set."""
        for u0 in range(start, start + count, self.t.rows):
            n = min(self.t.rows, start + count - u0)
            slot = self.stat_q.alloc_tensor(np.float32)
            regions = self._stat_regions(slot)
            for region, value in zip(regions, self.op.empty):
                fill(region, value, n)
            self._flush_stats(slot, regions, u0, n)

    # ---- parameters (scale, bias) along the normalised row ----
    def _load_params(self, tile: Tile, pos: int) -> None:
        for src, dst in zip(self.param_src, self.param_tensors):
            if src is None:
                continue
            p = self.in_q.alloc_tensor(self.sdt)
            copy_rows(p, src[pos], 1, tile.count, tile.count, tile.pitch, 0.0)
            self.in_q.enque(p)
            p = self.in_q.deque()
            convert(dst, p, tile.pitch)
            self.in_q.free_tensor(p)

    def _expand_params(self) -> None:
        """Parameters that broadcast over the normalised row: write the row-long copy into this
        core's part of the workspace, then read it from there like a full-length parameter."""
        t, ws, isz = self.t, self.ctx.workspace, self.sdt.itemsize
        most = self.ub.in_slot // isz // self.step * self.step
        for i, (src, repeat) in enumerate(zip(self.param_src, t.param_repeat)):
            if src is None or repeat == 1:
                continue
            n = t.length // repeat
            region = ws.addr + param_region(t, self.ctx.block_idx, i, isz, self.chip)
            dst = asc.GlobalTensor(ws.gm, region, self.sdt, t.length, "workspace", root=ws.root)
            for c0 in range(0, n, most):
                c = min(most, n - c0)
                p = self.in_q.alloc_tensor(self.sdt)
                copy_rows(p, src[c0], 1, c, c, -(-c // self.step) * self.step, 0.0)
                asc.set_flag(asc.HardEvent.MTE2_MTE3)
                asc.wait_flag(asc.HardEvent.MTE2_MTE3)
                for k in range(repeat):
                    copy_rows(dst[k * n + c0], p, 1, c, c, -(-c // self.step) * self.step)
                asc.set_flag(asc.HardEvent.MTE3_MTE2)
                asc.wait_flag(asc.HardEvent.MTE3_MTE2)
                self.in_q.free_tensor(p)
            self.param_src[i] = dst


def make_kernel(name: str, op: AxisOp, split: Callable):
    """The device kernel: `split(gm)` names x, the parameters, y and the stat outputs among the
    kernel's GM tensors (the schema's inputs, then its outputs)."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        x, params, y, stat_outs = split(gm)
        AxisKernel(ctx, op, [x], list(params), y, list(stat_outs)).run()

    return _named(kernel, name)


def make_fused_kernel(name: str, op: AxisOp, fusion: Fusion):
    """The device kernel of a fusion around `op`: the GM tensors are the kernel's inputs (by
    value id), then y."""

    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        ins = gm[:-1]
        params = [None if i is None else ins[i] for i in fusion.params]
        params += [None] * (op.params - len(params))          # omitted trailing parameters
        AxisKernel(ctx, op, [ins[i] for i in fusion.tiles], params, gm[-1], [], fusion,
                   ins).run()

    return _named(kernel, name)


def _named(kernel, name: str):
    kernel.__name__ = kernel.__qualname__ = name
    return kernel
