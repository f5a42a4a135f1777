"""The two layouts of the axis kernels on the device, as small strategy objects.

- `ROW`: the reduced axis is innermost; a unit is one contiguous row; a tile holds rows at a
  pitch the block reductions take, pad lanes holding the reduction's identity; statistics are
  one value per row.
- `COLUMN`: kept elements follow the reduced axis; a unit is `width` contiguous columns; a tile
  holds rows of them, combined row against row with plain vector ops; statistics are one value
  per column.

A layout says how a tile of `rows` x `count` is pitched, where a unit's segments lie in GM, how
to reduce along the axis and how to broadcast statistics back across it. A `Tile` is what an
AxisOp sees: the tile's geometry and those operations, bound to the kernel's buffers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ..ascend import lang as asc
from ..intmath import ceil_div, round_up
from .axis_ub import reduce_steps, row_pitch
from .reducers import REDUCERS
from .ub import as_bits, chunks

if TYPE_CHECKING:
    from .axis_kernel import AxisKernel, AxisOp
    from .axis_plan import AxisTiling
    from .reducers import Reducer


class Segment(NamedTuple):
    offset: int      # GM element offset of the first row
    rows: int
    count: int  # type: ignore[assignment]  # elements per row (shadows tuple.count)
    gm_pitch: int    # GM elements between rows
    pos: int         # position along the normalised row (parameters follow it)


def outer_offset(tiling: AxisTiling, o: int) -> int:
    """GM element offset of kept unit `o` (its index over the kept groups)."""
    off = 0
    for size, stride in reversed(tiling.kept):
        o, i = divmod(o, size)
        off += i * stride
    return off


def folded_offsets(tiling: AxisTiling, base: int) -> list[int]:
    """The offsets of every combination of the reduced outer groups, from `base`."""
    return [base + sum(i * stride for i, (_, stride) in zip(combo, tiling.folded))
            for combo in itertools.product(*(range(s) for s, _ in tiling.folded))]


class Tile:
    """`rows` rows of `count` elements in UB (compute dtype) at the layout's pitch, with the
    reductions and broadcasts along the reduced axis."""

    def __init__(self, kernel: AxisKernel, rows: int, count: int) -> None:
        self.kernel, self.layout = kernel, kernel.layout
        self.rows, self.count = rows, count
        self.pitch = self.layout.pitch(kernel, count)
        self.size = rows * self.pitch
        self.n = self.layout.per_statistic(rows, count)    # elements behind each statistic
        self.nstat = self.layout.statistics(rows, self.pitch)
        self.aux = kernel.aux
        self.params = kernel.param_tensors
        self.tiling = kernel.tiling
        self.cdt = kernel.cdt

    def reduce(self, kind: str, src: asc.LocalTensor, dst: asc.LocalTensor,
               keep: bool = True) -> None:
        """dst = the `kind` reduction of src along the axis; `keep=False` lets the column
        layout reduce in place."""
        self.layout.reduce(self, REDUCERS[kind], src, dst, keep)

    def apply(self, fn: Callable[..., None], dst: asc.LocalTensor, src: asc.LocalTensor,
              stat: asc.LocalTensor) -> None:
        """dst = fn(src, stat) with the statistics broadcast along the axis (valid lanes only,
        so row pads keep the identity the next reduction needs)."""
        self.layout.apply(self, fn, dst, src, stat)

    def scale(self, fn: Callable[..., None], dst: asc.LocalTensor, src: asc.LocalTensor,
              vec: asc.LocalTensor) -> None:
        """dst = fn(src, vec) with one vector along the row for every row (row layout)."""
        rowwise(fn, dst, src, vec, self.rows, self.pitch, self.count, per_row=False)

    def fill_pads(self, x: asc.LocalTensor, value: float, start: int) -> None:
        """Lanes [start, pitch) of every row hold `value` (row layout; columns have no pads)."""
        self.layout.fill_pads(self, x, value, start)


class RowLayout:
    name = "row"

    def pitch(self, kernel: AxisKernel, count: int) -> int:
        return row_pitch(count, kernel.chip, kernel.sdt.itemsize, kernel.cdt.itemsize)

    def per_statistic(self, rows: int, count: int) -> int:
        return count

    def statistics(self, rows: int, pitch: int) -> int:
        return rows

    def copy_pad(self, op: AxisOp) -> float:
        """What the copy pads each row's last block with: the op's identity."""
        return op.pad

    def unit(self, tiling: AxisTiling, u: int) -> tuple[int, int, int]:
        """Unit u's GM offset, where its statistics go, and how many it has."""
        return outer_offset(tiling, u), u, 1

    def segments(self, tiling: AxisTiling, offsets: list[int], width: int) -> list[Segment]:
        return [Segment(off + s0, 1, min(tiling.segment, tiling.length - s0),
                        min(tiling.segment, tiling.length - s0), s0)
                for off in offsets for s0 in range(0, tiling.length, tiling.segment)]

    def apply(self, tile: Tile, fn: Callable[..., None], dst: asc.LocalTensor,
              src: asc.LocalTensor, stat: asc.LocalTensor) -> None:
        kernel = tile.kernel
        chip = kernel.chip
        per = chip.repeat_bytes // chip.block_bytes
        for r0, n in chunks(ceil_div(tile.rows, per), chip.max_repeat, per * stat.itemsize,
                            chip.block_bytes):
            asc.brcb(kernel.bc[r0 * per * kernel.blk], stat[r0 * per], n)
        rowwise(fn, dst, src, kernel.bc, tile.rows, tile.pitch, tile.count, per_row=True)

    def reduce(self, tile: Tile, reducer: Reducer, src: asc.LocalTensor, dst: asc.LocalTensor,
               keep: bool) -> None:
        """Block reductions while rows are whole repeats, a fold of the remaining repeats into
        one, then one whole-repeat reduction per row (a reduction without those instructions:
        `_combine_rows`)."""
        if reducer.block is None:
            _combine_rows(tile, reducer, src, dst, keep)
            return
        assert reducer.whole is not None        # block reductions come with whole ones
        chip, isz, bb = tile.kernel.chip, src.itemsize, tile.kernel.chip.block_bytes
        lanes, blk, most = chip.lanes(isz), chip.block_elems(isz), chip.max_repeat
        per_rep = chip.repeat_bytes // bb
        steps, fold, _ = reduce_steps(tile.pitch, chip, isz)
        cur, v, regions = src, tile.pitch, tile.kernel.red
        for i in range(steps):
            out = regions[i % 2]
            for r0, n in chunks(tile.rows * v // lanes, most, per_rep * isz, bb):
                reducer.block(out[r0 * per_rep], cur[r0 * lanes], lanes, n)
            cur, v = out, v // blk
        if fold:
            acc = regions[steps % 2]
            copy = asc.UnaryRepeatParams(1, 1, per_rep, v // blk)
            step = asc.BinaryRepeatParams(1, 1, 1, per_rep, per_rep, v // blk)
            for r0, n in chunks(tile.rows, most, lanes * isz, bb):
                a, c = acc[r0 * lanes], cur[r0 * v]
                asc.muls(a, c, 1.0, lanes, n, copy)
                for j in range(1, ceil_div(v, lanes)):
                    reducer.combine(a, a, c[j * lanes], min(lanes, v - j * lanes), n, step)
            cur, v = acc, lanes
        for r0, n in chunks(tile.rows, most, isz, bb):
            reducer.whole(dst[r0], cur[r0 * v], v, n, 1, 1, v // blk)

    def fill_pads(self, tile: Tile, x: asc.LocalTensor, value: float, start: int) -> None:
        """A bit-masked duplicate for the block `start` falls in, then one for the whole blocks
        after it (any storage type, see `as_bits`)."""
        chip = tile.kernel.chip
        x, word = as_bits(x, value)
        blk = chip.block_elems(x.itemsize)
        head, body = start // blk * blk, round_up(start, blk)
        if head < start:
            _across_rows(tile, x, head, word, ((1 << blk) - (1 << (start - head)), 0))
        if body < tile.pitch:
            _across_rows(tile, x, body, word, tile.pitch - body)


class ColumnLayout:
    name = "column"

    def pitch(self, kernel: AxisKernel, count: int) -> int:
        return round_up(count, kernel.step)

    def per_statistic(self, rows: int, count: int) -> int:
        return rows

    def statistics(self, rows: int, pitch: int) -> int:
        return pitch

    def copy_pad(self, op: AxisOp) -> None:
        """Column tiles are whole blocks of columns: the copy pads with the row's own data."""
        return None

    def unit(self, tiling: AxisTiling, u: int) -> tuple[int, int, int]:
        o, c = divmod(u, ceil_div(tiling.inner, tiling.width))
        j0 = c * tiling.width
        return outer_offset(tiling, o) + j0, o * tiling.inner + j0, min(tiling.width,
                                                                        tiling.inner - j0)

    def segments(self, tiling: AxisTiling, offsets: list[int], width: int) -> list[Segment]:
        return [Segment(off + c0 * tiling.inner, min(tiling.rows, tiling.length - c0), width,
                        tiling.inner, 0)
                for off in offsets for c0 in range(0, tiling.length, tiling.rows)]

    def apply(self, tile: Tile, fn: Callable[..., None], dst: asc.LocalTensor,
              src: asc.LocalTensor, stat: asc.LocalTensor) -> None:
        rowwise(fn, dst, src, stat, tile.rows, tile.pitch, tile.pitch, per_row=False)

    def reduce(self, tile: Tile, reducer: Reducer, src: asc.LocalTensor, dst: asc.LocalTensor,
               keep: bool) -> None:
        """Halve the rows until one is left: rows [0, h) combine with [h, 2h), an odd last row
        joins row 0."""
        scratch = tile.aux if keep else src
        p, n, cur = tile.pitch, tile.rows, src
        if n == 1:
            asc.muls(dst, src, 1.0, p)
        while n > 1:
            h = n // 2
            out = dst if h == 1 else scratch
            reducer.combine(out, cur, cur[h * p], h * p)
            if n % 2:
                reducer.combine(out, out, cur[2 * h * p], p)
            cur, n = out, h

    def fill_pads(self, tile: Tile, x: asc.LocalTensor, value: float, start: int) -> None:
        pass


ROW, COLUMN = RowLayout(), ColumnLayout()
LAYOUTS = {layout.name: layout for layout in (ROW, COLUMN)}


def _across_rows(tile: Tile, x, offset, word, mask) -> None:
    """Duplicate `word` into the lanes `mask` selects (an int: the first lanes) from `offset`
    on in every row: one repeat per row where the row stride fits the repeat field and the
    lanes one repeat, else row by row."""
    chip, pitch = tile.kernel.chip, tile.pitch
    stride = pitch // chip.block_elems(x.itemsize)
    if stride <= chip.max_repeat and not (isinstance(mask, int)
                                          and mask > chip.lanes(x.itemsize)):
        for r0, n in chunks(tile.rows, chip.max_repeat, pitch * x.itemsize, chip.block_bytes):
            asc.duplicate(x[r0 * pitch + offset], word, mask, n, 1, stride)
        return
    for r in range(tile.rows):
        if isinstance(mask, int):
            asc.duplicate(x[r * pitch + offset], word, mask)    # count form
        else:
            asc.duplicate(x[r * pitch + offset], word, mask, 1)


def rowwise(fn: Callable[..., None], dst: asc.LocalTensor, src0: asc.LocalTensor,
            src1: asc.LocalTensor, rows: int, pitch: int, count: int, per_row: bool) -> None:
    """dst[r, :count] = fn(src0[r, :count], b) for each of `rows` rows `pitch` apart, where b is
    block r of src1 broadcast (per_row) or the vector src1 itself. Lanes past `count` keep their
    value. Issued across rows (one instruction per repeat-wide column chunk) or row by row,
    whichever takes fewer instructions."""
    chip, isz = dst.core.chip, dst.itemsize
    lanes, blk = chip.lanes(isz), chip.block_elems(isz)
    per_rep, most = chip.repeat_bytes // chip.block_bytes, chip.max_repeat
    full, tail = divmod(count, lanes)
    across = ceil_div(count, lanes) * ceil_div(rows, most)
    by_row = rows * (ceil_div(full, most) + (tail > 0))
    stride = pitch // blk
    if stride <= most and across <= by_row:           # repeat strides are u8 fields
        p = asc.BinaryRepeatParams(1, 1, 0 if per_row else 1, stride, stride, int(per_row))
        for r0, n in chunks(rows, most, pitch * isz, chip.block_bytes):
            for j in range(ceil_div(count, lanes)):
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


def _combine_rows(tile: Tile, reducer, src, dst, keep: bool) -> None:
    """A row reduction the ISA has no reduce instruction for (the product), from its
    elementwise combination alone: each row halves block-wise into its first block, the rows'
    first blocks are gathered side by side, brcb spreads each of their values over a block of
    its own, each row's blocks halve again into one, and a whole-repeat max over one lane (the
    identity on one value) packs one result per row into dst. Works in place (keep=False)."""
    if keep:
        raise ValueError(f"the row layout's {reducer.kind} reduction works in place")
    kernel = tile.kernel
    chip, isz = kernel.chip, src.itemsize
    blk = chip.block_elems(isz)
    blocks = tile.pitch // blk
    while blocks > 1:
        half = blocks // 2
        _combine_blocks(reducer, src, half, half, tile.rows, tile.pitch)
        if blocks % 2:
            _combine_blocks(reducer, src, 2 * half, 1, tile.rows, tile.pitch)
        blocks = half
    firsts, spread = kernel.red[1], kernel.red[0]
    _strided_rows(lambda d, s_, *form: asc.adds(d, s_, 0.0, *form), firsts, blk, src,
                  tile.pitch, blk, tile.rows, chip)
    per_rep = chip.repeat_bytes // chip.block_bytes            # brcb: values per repeat
    for q0, n in chunks(tile.rows * blk // per_rep, chip.max_repeat, per_rep * isz,
                        chip.block_bytes):
        asc.brcb(spread[q0 * per_rep * blk], firsts[q0 * per_rep], n)
    blocks = blk
    while blocks > 1:
        half = blocks // 2
        _combine_blocks(reducer, spread, half, half, tile.rows, blk * blk)
        if blocks % 2:
            _combine_blocks(reducer, spread, 2 * half, 1, tile.rows, blk * blk)
        blocks = half
    for r0, n in chunks(tile.rows, chip.max_repeat, isz, chip.block_bytes):
        asc.whole_reduce_max(dst[r0], spread[r0 * blk * blk], 1, n, 1, 1, blk)


def _combine_blocks(reducer, x, first: int, count: int, rows: int, pitch: int) -> None:
    """In every row of x (rows `pitch` elements apart): blocks [0, count) combine with blocks
    [first, first + count)."""
    chip = x.core.chip
    blk = chip.block_elems(x.itemsize)

    def combine(d, s_, count_or_mask, n=None, p=None) -> None:
        binary = p and asc.BinaryRepeatParams(1, 1, 1, p.dst_rep_stride, p.dst_rep_stride,
                                              p.src_rep_stride)
        reducer.combine(d, d, s_, count_or_mask, n, binary)

    _strided_rows(combine, x, pitch, x[first * blk], pitch, count * blk, rows, chip)


def _strided_rows(fn, dst, dst_pitch: int, src, src_pitch: int, count: int, rows: int,
                  chip) -> None:
    """fn(dst row, src row, mask, repeats, UnaryRepeatParams) over the first `count` elements
    of `rows` rows: one instruction per repeat-wide column chunk across rows where the row
    strides fit the repeat fields, else fn(dst row, src row, count) row by row."""
    isz = dst.itemsize
    lanes, blk, most = chip.lanes(isz), chip.block_elems(isz), chip.max_repeat
    d_stride, s_stride = dst_pitch // blk, src_pitch // blk
    if max(d_stride, s_stride) <= most:
        params = asc.UnaryRepeatParams(1, 1, d_stride, s_stride)
        for j in range(0, count, lanes):
            for r0, n in chunks(rows, most, max(dst_pitch, src_pitch) * isz, chip.block_bytes):
                fn(dst[r0 * dst_pitch + j], src[r0 * src_pitch + j], min(lanes, count - j), n,
                   params)
        return
    for r in range(rows):
        fn(dst[r * dst_pitch], src[r * src_pitch], count)
