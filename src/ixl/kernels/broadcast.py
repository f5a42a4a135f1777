"""Broadcasting (ONNX multidirectional) in the elementwise template.

Host side: how each input is seen through the output's dims (element strides, 0 where it
broadcasts), which inputs are built once per block instead of streamed, and whether tiles must
be whole output rows. Device side: moving rows of broadcast inputs in and rows of the output out.

When an input's shape differs from the output's, a tile is `rows` output rows laid out 32-byte
padded in UB (as data_copy_pad lays out blocks), and each input is brought in row by row: an
input whose last dim is the output's is copied with one strided data_copy_pad per run of evenly
spaced rows; an input whose last dim is 1 is copied one element per row (padded to a 32-byte
block of that value) and spread along the row with a block-stride-0 vector copy. An input that
is the same for every row (a scalar, or one row) is built once per block in its own buffer.
A row longer than a tile is cut into segments of the last dim, each a UB row of its own; the
inputs are then all streamed, but for single elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..intmath import round_up

if TYPE_CHECKING:
    from .elementwise import RowTile


@dataclass(frozen=True)
class InputPlan:
    """One kernel input seen through the output's dims."""

    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]   # element strides aligned to the output's dims, 0 where broadcast
    scalar: bool = False       # read once as a value (a Body's `scalars`), or omitted
    once: bool = False         # built once per block in its own buffer, not streamed

    @property
    def constant(self) -> bool:
        """The same data for every output row: a scalar or a single broadcast row."""
        return all(s == 0 for s in self.strides[:-1])

    @property
    def last_broadcast(self) -> bool:
        return bool(self.strides) and self.strides[-1] == 0

    @property
    def single(self) -> bool:
        """One element, broadcast over the whole output."""
        return math.prod(self.shape) == 1


OMITTED = InputPlan("", (), (), scalar=True)


def broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of `shape` seen through `out`'s dims (numpy broadcasting)."""
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    strides, step = [], 1
    for d in reversed(padded):
        strides.append(0 if d == 1 else step)
        step *= d
    return tuple(reversed(strides)) if out else ()


def input_plans(in_descs: list, out_shape: tuple[int, ...], scalar_ids: set[int],
                segmented: bool = False) -> tuple[tuple[InputPlan, ...], bool]:
    """The inputs' plans, and whether tiles are whole output rows (some input broadcasts other
    than as a single element). A single element is built once in any layout; in the row layout
    so is every input the same for all rows, unless rows are cut into segments."""
    inputs = tuple(OMITTED if d is None else
                   InputPlan(d.dtype, d.shape, broadcast_strides(d.shape, out_shape),
                             i in scalar_ids) for i, d in enumerate(in_descs))
    streamed = [p for p in inputs if not p.scalar]
    single = [p.shape != out_shape and p.single for p in streamed]
    rows = any(p.shape != out_shape and not one for p, one in zip(streamed, single))
    once = {id(p) for p, one in zip(streamed, single)
            if one or (rows and p.constant and not segmented)}
    return tuple(replace(p, once=id(p) in once) for p in inputs), rows


def row_pad(width: int, itemsizes: list[int], chip: ChipSpec) -> int:
    """Elements per UB row: `width` padded to whole blocks of the narrowest type."""
    return round_up(width, chip.block_elems(min(itemsizes)))


# ---------------------------------------------------------------- rows in and out

def copy_rows_in(x: asc.LocalTensor, src: asc.GlobalTensor, p: InputPlan,
                 out_shape: tuple[int, ...], tile: RowTile, pad: int, spread_event: int) -> None:
    """Rows `tile.row` .. + `tile.rows` of input p, columns from `tile.col` on, into x in padded
    row layout (`pad` elements a row); an input broadcast along the row is spread over it, after
    an MTE2 -> V flag of id `spread_event` (one the pipe allocated, no queue's)."""
    chip, isz = x.core.chip, x.itemsize
    offsets = _row_offsets(p, out_shape, tile.row, tile.rows)
    if not p.last_broadcast:
        offsets += tile.col
    width = 1 if p.last_broadcast else tile.width
    ub_pitch = chip.block_elems(isz) if p.last_broadcast else pad
    ub_gap = (ub_pitch * isz - round_up(width * isz, chip.block_bytes)) // chip.block_bytes
    for start, count, pitch in _runs(offsets):
        gm_gap = (pitch - width) * isz if count > 1 else 0
        asc.data_copy_pad(x[start * ub_pitch], src[int(offsets[start])],
                          asc.DataCopyExtParams(count, width * isz, gm_gap, ub_gap))
    if p.last_broadcast:
        asc.set_flag(asc.HardEvent.MTE2_V, spread_event)
        asc.wait_flag(asc.HardEvent.MTE2_V, spread_event)
        _spread_rows(x, tile.rows, pad)


def copy_rows_out(dst: asc.GlobalTensor, y: asc.LocalTensor, out_shape: tuple[int, ...],
                  tile: RowTile, pad: int) -> None:
    """The tile's rows of y (padded row layout) to their place in the output."""
    chip, isz = y.core.chip, y.itemsize
    n_last = out_shape[-1]
    nbytes = tile.width * isz
    ub_gap = (pad * isz - round_up(nbytes, chip.block_bytes)) // chip.block_bytes
    gm_gap = (n_last - tile.width) * isz
    asc.data_copy_pad(dst[tile.row * n_last + tile.col], y,
                      asc.DataCopyExtParams(tile.rows, nbytes, ub_gap, gm_gap))


def _spread_rows(x: asc.LocalTensor, rows: int, pad: int) -> None:
    """Row r's value fills block r; spread each over its padded row, last row first, so
    no block is overwritten before it is read (a row is at least one block wide). The
    copy adds 0 to the bits as integers, so any storage type spreads exactly."""
    chip = x.core.chip
    bits = np.dtype(np.int32 if x.itemsize == 4 else np.int16)
    width = pad * x.itemsize // bits.itemsize
    x = x.reinterpret(bits)
    lanes = chip.lanes(x.itemsize)
    block = chip.block_elems(x.itemsize)
    full, tail = divmod(width, lanes)
    params = asc.UnaryRepeatParams(dst_blk_stride=1, src_blk_stride=0,
                                   dst_rep_stride=8, src_rep_stride=0)
    for r in reversed(range(rows)):
        src = x[r * block]
        if full:
            asc.adds(x[r * width], src, 0, lanes, full, params)
        if tail:
            asc.adds(x[r * width + full * lanes], src, 0, tail, 1, params)


def _row_offsets(p: InputPlan, out_shape: tuple[int, ...], r0: int, k: int) -> np.ndarray:
    """Element offset in input p of the first element of output rows r0..r0+k."""
    outer = out_shape[:-1]
    idx = np.unravel_index(np.arange(r0, r0 + k), outer) if outer else ()
    off = np.zeros(k, np.int64)
    for d, stride in zip(idx, p.strides[:-1]):
        off += d * stride
    return off


def _runs(offsets: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, count, pitch) runs of evenly increasing offsets (pitch > 0) or single rows."""
    runs, i, n = [], 0, len(offsets)
    while i < n:
        j = i + 1
        pitch = int(offsets[j] - offsets[i]) if j < n else 0
        if pitch > 0:
            while j + 1 < n and offsets[j + 1] - offsets[j] == pitch:
                j += 1
            j += 1
        runs.append((i, j - i, pitch))
        i = j
    return runs
