"""The row-move template: the data-movement ops (Concat, Split, Slice, Expand, Tile, Pad, Gather,
GatherND, a Transpose that keeps the last axis) as rows of the output copied from rows of an
input, GM -> UB -> GM.

An op describes its output as *parts* (one per input of a Concat, one per output of a Split,
one otherwise). A part is a grid of output rows: its row axes, each a map from the output
coordinate to a source coordinate (`DimMap`: affine with a start and a step, or one of Pad's
folds), and a row of `width` elements. A row either copies `width` contiguous source elements,
or, when the last axis itself is remapped (a step, a pad, a repeat on the last dim), reads the
whole source row and picks its elements with the vector unit's Gather through an offset table
built once per core (the part's `row_map`).

Per tile (rows that fit UB at the configured buffer count): copy_in finds each row's source
(scalar code over the tiling data, or an index read from UB for Gather) and moves runs of rows
evenly spaced in GM with one strided DataCopyPad each (a run of rows that all read the same
source row, as Expand makes, is read once and repeated in UB); compute hands the tile over to
the output queue with a vector copy of the bits (any dtype) or a Gather, and fills pad rows;
copy_out writes runs of evenly spaced output rows with one DataCopyPad each. Rows longer than a
tile are cut into column chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import DTYPES, to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, KernelEntry, LaunchPlan, register_kernel
from ..nixl.tuning import DoesNotFit, TuningConfig, TuningSpace
from .tiling import Tiling, largest_fit, split_units
from .ub import abs_int, floor_div
from .version import BUILT_FOR_RUNTIME

TUNING_FIELDS = ("buffer_num", "tile_div", "block_dim")
TUNING_SPACE = TuningSpace(buffer_num=(1, 2, 4), tile_div=(1, 2), core_div=(1, 2))


# ---------------------------------------------------------------- how output coordinates map

@dataclass(frozen=True)
class DimMap:
    """Output coordinate c of an axis -> source coordinate: x = start + c * step, then folded
    into a source dim of `extent` by `fold` (Pad's modes; Tile is a wrap; "constant" leaves
    x outside [0, extent) to the pad value)."""

    start: int = 0
    step: int = 1
    fold: str = "affine"
    extent: int = 0

    def source(self, c: np.ndarray) -> np.ndarray:
        """Source coordinates of coordinates `c` (-1 where the pad value goes)."""
        x = self.start + c * self.step
        d = self.extent
        if self.fold == "affine":
            return x
        if self.fold == "constant":
            return np.where((x >= 0) & (x < d), x, -1)
        if self.fold == "edge" or (self.fold == "reflect" and d == 1):
            return np.clip(x, 0, d - 1)
        if self.fold == "reflect":
            return (d - 1) - np.abs((d - 1) - np.abs(x))
        return np.mod(x, d)


@dataclass(frozen=True)
class Axis:
    """A row axis of a part: `size` output coordinates; a step moves `dst_stride` output
    elements; a source coordinate moves `src_stride` source elements."""

    size: int
    src_stride: int
    dst_stride: int
    map: DimMap = DimMap()


@dataclass(frozen=True)
class Part:
    """Output rows of one (source, destination) pair of kernel arguments."""

    src: int                        # kernel argument the rows come from
    dst: int                        # kernel argument they go to
    axes: tuple[Axis, ...]          # row axes, outermost first
    width: int                      # elements per output row
    src_base: int = 0
    dst_base: int = 0
    row_map: DimMap | None = None   # the last dim remapped: rows read `row_map.extent` elements

    @property
    def rows(self) -> int:
        return int(np.prod([a.size for a in self.axes], dtype=np.int64)) if self.width else 0

    @property
    def src_row(self) -> int:
        """Source elements a row reads."""
        return self.width if self.row_map is None else self.row_map.extent

    def sources(self, first: int, count: int) -> np.ndarray:
        """Source offsets of rows first .. first + count - 1 (-1: a pad row)."""
        rows = np.arange(first, first + count, dtype=np.int64)
        offsets = np.full(count, self.src_base, np.int64)
        pad = np.zeros(count, bool)
        for axis in reversed(self.axes):
            rows, c = np.divmod(rows, axis.size)
            x = axis.map.source(c)
            pad |= x < 0
            offsets += x * axis.src_stride
        return np.where(pad, -1, offsets)

    def destinations(self, first: int, count: int) -> np.ndarray:
        rows = np.arange(first, first + count, dtype=np.int64)
        offsets = np.full(count, self.dst_base, np.int64)
        for axis in reversed(self.axes):
            rows, c = np.divmod(rows, axis.size)
            offsets += c * axis.dst_stride
        return offsets


def axes_of(shape: tuple, src_strides: tuple, dst_strides: tuple, maps: tuple
            ) -> tuple[int, tuple[Axis, ...]]:
    """(src_base, axes) of an output grid with one map per dim, simplified: affine starts
    folded into the source base and steps into the strides, size-1 axes dropped (when they map
    inside the source) and neighbouring affine axes contiguous in both source and output
    merged."""
    src_base = 0
    axes: list[Axis] = []
    for size, s, d, m in zip(shape, src_strides, dst_strides, maps):
        if m.fold == "affine":
            src_base += m.start * s
            s, m = s * m.step, DimMap()
        first = int(m.source(np.zeros(1, np.int64))[0])
        if size == 1 and first >= 0:
            src_base += first * s
            continue
        prev = axes[-1] if axes else None
        if (prev is not None and m.fold == prev.map.fold == "affine"
                and prev.src_stride == s * size and prev.dst_stride == d * size):
            axes[-1] = Axis(prev.size * size, s, d)
        else:
            axes.append(Axis(size, s, d, m))
    return src_base, tuple(axes)


def grid_part(src: int, dst: int, shape: tuple, src_strides: tuple, dst_strides: tuple,
              maps: tuple, src_base: int = 0, dst_base: int = 0, src_last: int = 0) -> Part:
    """A part from an output grid: `shape`, and per dim the source stride, the destination
    stride and the map. Rows are the innermost contiguous run; when the last dim is remapped
    (a step, a fold) within the source's last dim (`src_last` elements, both last dims
    contiguous), rows read the whole source row and a row map picks its elements."""
    if not shape or 0 in shape:
        return Part(src, dst, (), 0 if 0 in shape else 1, src_base, dst_base)
    last = maps[-1]
    if last.fold == "affine" and last.step == 1:
        base, axes = axes_of(shape, src_strides, dst_strides, maps)
        inner = axes[-1] if axes else None
        if inner is not None and inner.src_stride == inner.dst_stride == 1 \
                and inner.map.fold == "affine":      # a folded axis is no contiguous run
            return Part(src, dst, axes[:-1], inner.size, src_base + base, dst_base)
        return Part(src, dst, axes, 1, src_base + base, dst_base)
    if src_strides[-1] != 1 or dst_strides[-1] != 1:
        raise ValueError("a row map needs the source's and the output's last dims contiguous")
    base, axes = axes_of(shape[:-1], src_strides[:-1], dst_strides[:-1], maps[:-1])
    row_map = DimMap(last.start, last.step, last.fold, src_last)
    return Part(src, dst, axes, shape[-1], src_base + base, dst_base, row_map)


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class RowMoveTiling(Tiling):
    parts: tuple[Part, ...]
    per_core: int          # rows per core (over the parts, in order)
    tile: int              # rows per tile
    chunk: int             # elements per row piece (the width, unless rows are cut)
    src_pitch: int         # UB elements per source row (a block multiple)
    dst_pitch: int         # UB elements per output row
    lanes: int             # gather lanes per output element (2 for 8-byte elements)
    dtype: str
    pad_arg: int | None    # the kernel argument holding the pad value (None: zeros)
    index_arg: int | None  # the kernel argument holding indices (Gather's), if any
    index_dtype: str | None
    config: TuningConfig

    @property
    def total(self) -> int:
        return sum(p.rows for p in self.parts)

    @property
    def mapped(self) -> bool:
        return any(p.row_map is not None for p in self.parts)


# ---------------------------------------------------------------- host tiling

def plan(parts: list[Part], dtype: str, chip: ChipSpec, config: TuningConfig | None, *,
         pad_arg: int | None = None, index_arg: int | None = None,
         index_dtype: str | None = None, index_bytes: Callable[[int], int] = lambda tile: 0
         ) -> LaunchPlan:
    """Rows per tile from UB (R11): the input and output queues at the configured buffer count,
    the pad block, and for row maps the offset table and its scratch; `index_bytes(tile)` is
    what a Gather's index buffer takes. Rows longer than a tile are cut into chunks."""
    config = (config or TuningConfig()).only(TUNING_FIELDS, "the row-move kernels")
    parts = [p for p in parts if p.rows]
    isz = to_numpy(dtype).itemsize
    blk = chip.block_elems(isz)
    mapped = any(p.row_map is not None for p in parts)
    width = max((p.width for p in parts), default=0)
    lanes = 2 if isz == 8 else 1
    if mapped and isz not in (2, 4, 8):
        raise DoesNotFit(f"{isz}-byte elements: the vector Gather that remaps a row takes 16- "
                         f"and 32-bit lanes")
    src_row = max((round_up(p.src_row, blk) for p in parts), default=0)
    maps = len({p.row_map for p in parts if p.row_map is not None})

    def ub_bytes(tile: int, chunk: int) -> int:
        dst = round_up(chunk, blk)
        src = src_row if mapped else dst
        slots = round_up((tile * src + blk) * isz, chip.block_bytes) \
            + round_up(tile * dst * isz, chip.block_bytes)
        lanes_per_row = round_up(dst * lanes, chip.block_bytes // 4)
        table = (maps * tile + 4) * lanes_per_row * 4 if mapped else 0
        return config.buffers * slots + table + chip.block_bytes + index_bytes(tile)

    chunk = width
    if width and ub_bytes(1, width) > chip.ub_bytes:
        if mapped:
            raise DoesNotFit(f"a row of {width} elements remapped within a source row of "
                             f"{src_row} does not fit in UB at {config.buffers} buffers")
        blocks = largest_fit(lambda n: ub_bytes(1, n * blk), chip.ub_bytes,
                             ceil_div(width, blk))
        if not blocks:
            raise DoesNotFit(f"no row piece fits in UB at {config.buffers} buffers")
        chunk = round_up(ceil_div(width, ceil_div(width, blocks * blk)), blk)
    tile = largest_fit(lambda n: ub_bytes(n, chunk), chip.ub_bytes, chip.max_copy_blocks)
    if not tile:
        raise DoesNotFit(f"no tile of rows fits in UB at {config.buffers} buffers")
    tile = max(1, tile // config.divisor)
    block_dim, per_core = split_units(sum(p.rows for p in parts), chip, config.block_dim)
    pitch = round_up(chunk, blk)
    return LaunchPlan(block_dim, RowMoveTiling(
        tuple(parts), per_core, tile, chunk, src_row if mapped else pitch, pitch, lanes, dtype,
        pad_arg, index_arg, index_dtype, config))


# ---------------------------------------------------------------- the device kernel

class Tile(NamedTuple):
    part: Part
    row: int          # first row of the part
    rows: int
    col: int          # first element of the row piece
    width: int        # elements of the piece


class Run(NamedTuple):
    """Rows `first` .. `first + count - 1` of a tile, `stride` elements apart in GM (0: every
    row is the same source row)."""

    first: int
    count: int  # type: ignore[assignment]  # the field shadows tuple.count
    offset: int
    stride: int


def runs(offsets: np.ndarray, width: int, most: int, repeats: bool = True) -> list[Run]:
    """Consecutive rows whose GM offsets step evenly by at least `width` (one strided copy
    each), or, with `repeats`, by 0 (one row, read once: never for writes, where a repeated
    destination takes each row in turn); -1 offsets (pad rows) are left out."""
    out: list[Run] = []
    i, n = 0, len(offsets)
    while i < n:
        if offsets[i] < 0:
            i += 1
            continue
        j = i + 1
        step = int(offsets[j] - offsets[i]) if j < n and offsets[j] >= 0 else -1
        if step >= width or (step == 0 and repeats):
            while (j < n and j - i < most and offsets[j] >= 0
                   and offsets[j] - offsets[j - 1] == step):
                j += 1
        else:
            step = width
        out.append(Run(i, j - i, int(offsets[i]), step))
        i = j
    return out


def move_rows(local: asc.LocalTensor, gm: asc.GlobalTensor, run: Run, width: int,
              pitch: int, inbound: bool) -> None:
    """One run between GM and UB: a DataCopyPad of `run.count` blocks of `width` elements,
    GM-side `run.stride` apart, UB-side `pitch` apart (a run of one repeated row: one block)."""
    isz = local.itemsize
    blk = local.core.chip.block_bytes
    count = 1 if run.stride == 0 else run.count
    gm_gap = (run.stride - width) * isz if count > 1 else 0
    ub_gap = (pitch * isz - round_up(width * isz, blk)) // blk
    ub = local[run.first * pitch]
    if inbound:
        asc.data_copy_pad(ub, gm[run.offset],
                          asc.DataCopyExtParams(count, width * isz, gm_gap, ub_gap))
    else:
        asc.data_copy_pad(gm[run.offset], ub,
                          asc.DataCopyExtParams(count, width * isz, ub_gap, gm_gap))


class RowMoveKernel:
    """One block: its range of rows over the parts, tile by tile."""

    merge_runs = True       # rows evenly spaced in GM share one copy (False: a copy per row)

    def __init__(self, ctx: KernelContext, gm: tuple) -> None:
        """Init: the pipe, an input and an output queue, the pad block, the offset tables of
        the row maps."""
        tiling: RowMoveTiling = ctx.tiling
        self.ctx, self.tiling, self.gm = ctx, tiling, gm
        self.dtype = to_numpy(tiling.dtype)
        self.blk = ctx.chip.block_elems(self.dtype.itemsize)
        self.word = np.dtype(np.int16 if self.dtype.itemsize <= 2 else np.int32)
        self.pipe = asc.TPipe()
        self.in_q, self.out_q = asc.TQue(asc.TPosition.VECIN), asc.TQue(asc.TPosition.VECOUT)
        isz = self.dtype.itemsize
        buffers = tiling.config.buffers
        # Each input slot ends in one block for the pad value, which a row map's Gather reads.
        self.pad_at = tiling.tile * tiling.src_pitch
        self.pipe.init_buffer(self.in_q, buffers, (self.pad_at + self.blk) * isz)
        self.pipe.init_buffer(self.out_q, buffers, tiling.tile * tiling.dst_pitch * isz)
        self.pad = self._pad_block()
        self.tables = self._offset_tables() if tiling.mapped else {}
        self.init_extra()

    def init_extra(self) -> None:
        """What a kernel built on this template adds to Init (Gather's index buffer)."""

    def _pad_block(self) -> asc.LocalTensor:
        """One block holding the pad value in every element (from GM, or zeros)."""
        buf = asc.TBuf()
        self.pipe.init_buffer(buf, self.ctx.chip.block_bytes)
        block = buf.get(self.dtype)
        arg = self.tiling.pad_arg
        if arg is None or arg >= len(self.gm) or self.gm[arg] is None:
            zeros = block.reinterpret(np.int32)
            asc.duplicate(zeros, 0, zeros.count)
            return block
        # DataCopyPad fills the rest of the block with the element it copies.
        asc.data_copy_pad(block, self.gm[arg], asc.DataCopyExtParams(1, block.itemsize, 0, 0))
        event = self.pipe.alloc_event_id(asc.HardEvent.MTE2_V)
        asc.set_flag(asc.HardEvent.MTE2_V, event)
        asc.wait_flag(asc.HardEvent.MTE2_V, event)
        return block

    def _offset_tables(self) -> dict:
        """Per row map, the Gather offsets of one tile (built once, with vector arithmetic)."""
        tiling = self.tiling
        per_row = round_up(tiling.dst_pitch * tiling.lanes, self.ctx.chip.block_bytes // 4)
        scratch = []
        for dtype in (np.int32, np.int32, np.int32, np.float32):
            buf = asc.TBuf()
            self.pipe.init_buffer(buf, per_row * 4)
            scratch.append(buf.get(dtype))
        tables = {}
        for part in tiling.parts:
            if part.row_map is None or part.row_map in tables:
                continue
            buf = asc.TBuf()
            self.pipe.init_buffer(buf, tiling.tile * per_row * 4)
            table = buf.get(np.int32)
            build_row_table(table, part.row_map, tiling, per_row, self.pad_at, *scratch)
            tables[part.row_map] = table.reinterpret(np.uint32)
        return tables

    # ---- the tile loop ----
    def process(self) -> None:
        tiling = self.tiling
        start = self.ctx.block_idx * tiling.per_core
        end = min(start + tiling.per_core, tiling.total)
        first = 0
        for part in tiling.parts:
            self.move(part, max(start, first) - first, min(end, first + part.rows) - first)
            first += part.rows

    def move(self, part: Part, lo: int, hi: int) -> None:
        """Rows lo .. hi - 1 of `part`, tile by tile (rows longer than a tile in chunks)."""
        tiling = self.tiling
        for r0 in range(lo, hi, tiling.tile):
            rows = min(tiling.tile, hi - r0)
            for c0 in range(0, part.width, tiling.chunk):
                tile = Tile(part, r0, rows, c0, min(tiling.chunk, part.width - c0))
                self.copy_in(tile)
                self.compute(tile)
                self.copy_out(tile)

    def sources(self, tile: Tile) -> np.ndarray:
        """Source offsets of the tile's rows (-1: pad rows); Gather reads them from indices."""
        return tile.part.sources(tile.row, tile.rows)

    def destinations(self, tile: Tile) -> np.ndarray:
        """Output offsets of the tile's rows; ScatterND reads them from indices."""
        return tile.part.destinations(tile.row, tile.rows)

    def copy_in(self, tile: Tile) -> None:
        """The tile's source rows, one strided DataCopyPad per run."""
        part = tile.part
        offsets = self.sources(tile)
        width = tile.width if part.row_map is None else part.src_row
        x = self.in_q.alloc_tensor(self.dtype)
        # a row map's Gather reads row r at r x src_pitch: a repeated row is read into each
        # of its slots, not once
        self.in_runs = runs(offsets, width,
                            self.ctx.chip.max_copy_blocks if self.merge_runs else 1,
                            repeats=part.row_map is None)
        for run in self.in_runs:
            move_rows(x, self.gm[part.src], run._replace(offset=run.offset + tile.col), width,
                      self.tiling.src_pitch, inbound=True)
        self.pad_rows = np.flatnonzero(offsets < 0)
        self.in_q.enque(x)

    def compute(self, tile: Tile) -> None:
        """The tile into the output slot: rows copied bit for bit (a row read once for a run
        goes to each of its rows), or picked through the row map's offset table; pad rows take
        the pad value."""
        tiling = self.tiling
        x = self.in_q.deque()
        y = self.out_q.alloc_tensor(self.dtype)
        if tile.part.row_map is not None:
            self._copy_bits(x[self.pad_at], self.pad, self.blk)
            words = (y, x) if tiling.lanes == 1 else (y.reinterpret(np.int32),
                                                       x.reinterpret(np.int32))
            asc.gather(*words, self.tables[tile.part.row_map], 0,
                       tile.rows * tiling.dst_pitch * tiling.lanes)
        elif all(run.stride for run in self.in_runs):
            self._copy_bits(y, x, tile.rows * tiling.dst_pitch)
        else:
            for run in self.in_runs:
                src = x[run.first * tiling.src_pitch]
                if run.stride:
                    self._copy_bits(y[run.first * tiling.dst_pitch], src,
                                    run.count * tiling.dst_pitch)
                    continue
                for r in range(run.first, run.first + run.count):
                    self._copy_bits(y[r * tiling.dst_pitch], src, tiling.dst_pitch)
        for pad_row in self.pad_rows:
            self._fill(y[int(pad_row) * tiling.dst_pitch], tiling.dst_pitch)
        self.out_q.enque(y)
        self.in_q.free_tensor(x)

    def copy_out(self, tile: Tile) -> None:
        """The tile's output rows, one strided DataCopyPad per run."""
        y = self.out_q.deque()
        offsets = self.destinations(tile) + tile.col
        for run in runs(offsets, tile.width, self.ctx.chip.max_copy_blocks, repeats=False):
            move_rows(y, self.gm[tile.part.dst], run, tile.width, self.tiling.dst_pitch,
                      inbound=False)
        self.out_q.free_tensor(y)

    # ---- vector helpers ----
    def _copy_bits(self, dst: asc.LocalTensor, src: asc.LocalTensor, count: int) -> None:
        """`count` elements (a block multiple) copied bit for bit, whatever the dtype."""
        n = count * self.dtype.itemsize // self.word.itemsize
        asc.adds(dst.reinterpret(self.word), src.reinterpret(self.word), 0, n)

    def _fill(self, dst: asc.LocalTensor, count: int) -> None:
        """`count` elements (a block multiple) set to the pad value: the pad block spread with
        a source block stride of 0, the last repeat masked to the row."""
        chip = self.ctx.chip
        lanes = chip.lanes(self.word.itemsize)
        n = count * self.dtype.itemsize // self.word.itemsize
        d, block = dst.reinterpret(self.word), self.pad.reinterpret(self.word)
        params = asc.UnaryRepeatParams(1, 0, 8, 0)
        full, rest = divmod(n, lanes)
        for first in range(0, full, chip.max_repeat):
            asc.adds(d[first * lanes], block, 0, lanes, min(chip.max_repeat, full - first),
                     params)
        if rest:
            asc.adds(d[full * lanes], block, 0, rest, 1, params)


def build_row_table(table: asc.LocalTensor, m: DimMap, tiling: RowMoveTiling, per_row: int,
                    pad_at: int, lane: asc.LocalTensor, x: asc.LocalTensor,
                    inside: asc.LocalTensor, flt: asc.LocalTensor) -> None:
    """The Gather offsets (bytes, as int32) of one tile for row map `m`: output element j of
    row r reads (r x src_pitch + source(j)) x itemsize (+ 4 for the high word of an 8-byte
    element); a pad position reads the pad block at `pad_at`; lanes past the row read inside
    it. Built with int32 vector arithmetic: CreateVecIndex, muls, adds, maxs, mins, and a
    float cast where a division is needed."""
    isz = to_numpy(tiling.dtype).itemsize
    word = isz // tiling.lanes
    asc.create_vec_index(lane, 0, per_row)               # the lane within a row
    if tiling.lanes == 2:                                # element j = lane // 2, and the
        floor_div(x, lane, 2, flt, per_row)             # high word (+4) on odd lanes
        floor_div(lane, lane, 2, flt, per_row, keep=True)
        asc.muls(lane, lane, word, per_row)
    else:
        asc.adds(x, lane, 0, per_row)
    asc.muls(x, x, m.step, per_row)                      # x = start + j * step
    asc.adds(x, x, m.start, per_row)
    d = max(m.extent, 1)
    if m.fold == "wrap":                                 # x - d * floor(x / d)
        floor_div(x, x, d, flt, per_row, keep=True)
    elif m.fold == "reflect" and d > 1:                  # (d-1) - |(d-1) - |x||
        for _ in range(2):
            abs_int(x, inside, per_row)
            asc.muls(x, x, -1, per_row)
            asc.adds(x, x, d - 1, per_row)
    elif m.fold == "constant":                           # 1 where x is outside [0, d)
        asc.maxs(inside, x, 0, per_row)
        asc.mins(inside, inside, d - 1, per_row)
        asc.sub(inside, x, inside, per_row)
        abs_int(inside, table, per_row)
        asc.mins(inside, inside, 1, per_row)
    asc.maxs(x, x, 0, per_row)                           # lanes past the row, edge
    asc.mins(x, x, d - 1, per_row)
    asc.muls(x, x, isz, per_row)
    pad = flt.reinterpret(np.int32)
    for r in range(tiling.tile):
        row = table[r * per_row]
        asc.adds(row, x, r * tiling.src_pitch * isz, per_row)
        if m.fold == "constant":                         # row + inside * (pad - row)
            asc.muls(pad, row, -1, per_row)
            asc.adds(pad, pad, pad_at * isz, per_row)
            asc.mul(pad, pad, inside, per_row)
            asc.add(row, row, pad, per_row)
        if tiling.lanes == 2:
            asc.add(row, row, lane, per_row)


def make_kernel(name: str, kernel_class: type[RowMoveKernel] = RowMoveKernel
                ) -> Callable[..., None]:
    """The device kernel: `kernel(ctx, *inputs, *outputs)`; the parts say what moves where."""
    def kernel(ctx: KernelContext, *gm: asc.GlobalTensor) -> None:
        kernel_class(ctx, gm).process()
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


# ---------------------------------------------------------------- registration

MOVE_DTYPES = tuple(DTYPES)          # data movement is byte movement: every dtype


def register_moves(op: str, parts_of: Callable[[list, list, dict], list[Part]], *,
                   pad_arg: Callable[[list, dict], int | None] = lambda ins, attrs: None,
                   declines: Callable[[list, dict], str | None] = (
                       lambda in_descs, attrs: None)) -> None:
    """Register `op` on this template: `parts_of(ins, outs, attrs)` gives its parts."""
    def tiling(ins, outs, attrs, chip, config):
        return plan(parts_of(ins, outs, attrs), outs[0].dtype, chip, config,
                    pad_arg=pad_arg(ins, attrs))
    register_kernel(KernelEntry(
        op=op, kernel=make_kernel(f"{op.lower()}_kernel"), tiling=tiling, dtypes=MOVE_DTYPES,
        built_for_runtime=BUILT_FOR_RUNTIME, declines=declines, tuning_space=TUNING_SPACE))
