"""Reductions to few values, split across cores: the cross-core combination.

The input is seen as `units` rows of `length` contiguous elements (the reduced axes trail).
Each row is cut into one chunk per core of its group; a core reduces its chunk to one float32
partial (accumulating in float32 whatever the input type, R13) and writes it to its own 32-byte
slot of a GM workspace; all cores meet at a SyncAll; the first core of each group reads its
row's partials back, combines them in float32 and writes the output. The axis template keeps
every output unit on one core, so the host tiling picks this path when there are fewer units
than half the cores and a unit is longer than a tile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..nixl import KernelContext, LaunchPlan, TensorDesc
from .tiling import split_cores, tile_elements

F32 = np.dtype(np.float32)
EVENT = 7      # the event id of the hand-placed flags: the queue (ids 0, 1) never uses it
COMBINE = {"sum": asc.add, "max": asc.max, "min": asc.min}
WHOLE = {"sum": asc.whole_reduce_sum, "max": asc.whole_reduce_max, "min": asc.whole_reduce_min}


@dataclass(frozen=True)
class SplitTiling:
    units: int          # output values (rows of the input)
    length: int         # elements reduced into each
    per_unit: int       # cores working on one row
    chunk: int          # elements of a row per core
    tile: int           # input elements per tile
    kind: str           # sum, max or min
    mean: bool
    identity: float
    dtype: str          # input (and output) dtype


def split_plan(x: TensorDesc, units: int, kind: str, mean: bool, identity: float,
               chip: ChipSpec, config: dict | None = None) -> LaunchPlan | None:
    """The split plan for `units` rows, or None when one core per row is enough (many rows,
    or rows that fit in one tile)."""
    config = config or {}
    buffers = int(config.get("buffer_num", 2))
    # per element: the queued input, plus a float32 copy and the float32 accumulator
    tile = tile_elements(chip, queued_bytes=x.itemsize, buffer_num=buffers,
                         scratch_bytes=2 * F32.itemsize, vector_itemsize=F32.itemsize)
    cores = min(int(config.get("block_dim", chip.aiv_cores)), chip.aiv_cores)
    length = x.size // units if units else 0
    if not units or units * 2 > cores or length <= tile:
        return None
    per_unit = cores // units
    _, chunk = split_cores(length, chip, x.itemsize, per_unit)
    per_unit = -(-length // chunk)
    block_dim = units * per_unit
    return LaunchPlan(block_dim, SplitTiling(units, length, per_unit, chunk, tile, kind, mean,
                                             identity, x.dtype), block_dim * chip.block_bytes)


def split_kernel(ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor):
    """The device side (a generator: it meets the other cores at a SyncAll)."""
    t: SplitTiling = ctx.tiling
    chip = ctx.chip
    dtype = to_numpy(t.dtype)
    lanes = chip.lanes(F32.itemsize)
    unit, part = divmod(ctx.block_idx, t.per_unit)
    start = part * t.chunk
    length = min(t.chunk, t.length - start)
    src = x.window(unit * t.length + start, length)

    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN)
    pipe.init_buffer(q, 2, t.tile * dtype.itemsize)
    acc_buf, wide_buf = asc.TBuf(), asc.TBuf()
    pipe.init_buffer(acc_buf, t.tile * F32.itemsize)
    pipe.init_buffer(wide_buf, t.tile * F32.itemsize)
    acc, wide = acc_buf.get(F32), wide_buf.get(F32)
    asc.duplicate(acc, t.identity, t.tile)
    for offset in range(0, length, t.tile):
        n = min(t.tile, length - offset)
        tile = q.alloc_tensor(dtype)
        nbytes = n * dtype.itemsize
        asc.data_copy_pad(tile, src[offset], asc.DataCopyExtParams(1, nbytes, 0, 0))
        q.enque(tile)
        tile = q.deque()
        if dtype != F32:
            asc.cast(wide, tile, asc.RoundMode.CAST_NONE, n)
            tile_f32 = wide
        else:
            tile_f32 = tile
        COMBINE[t.kind](acc, acc, tile_f32, n)
        q.free_tensor(tile)
    _to_one(acc, wide, t.tile, t.kind, t.identity, lanes, chip)
    if t.mean:
        asc.muls(acc, acc, 1.0 / t.length, 1)
    slot = chip.block_elems(F32.itemsize)
    asc.set_flag(asc.HardEvent.V_MTE3, EVENT)
    asc.wait_flag(asc.HardEvent.V_MTE3, EVENT)
    asc.data_copy(ctx.workspace.reinterpret(F32)[ctx.block_idx * slot], acc, slot)
    yield asc.sync_all()
    if part == 0:
        _combine_partials(ctx, t, y[unit], unit, acc, wide, slot, lanes)


def _to_one(acc, tmp, count: int, kind: str, identity: float, lanes: int, chip: ChipSpec) -> None:
    """Reduce `count` float32 values in acc to acc[0], a whole repeat at a time."""
    limit = chip.max_repeat // 8 * 8       # chunks start on 32-byte boundaries
    while count > 1:
        repeats = -(-count // lanes)
        asc.duplicate(tmp, identity, -(-repeats // lanes) * lanes)
        for first in range(0, repeats, limit):
            r = min(limit, repeats - first)
            WHOLE[kind](tmp[first], acc[first * lanes], lanes, r)
        asc.adds(acc, tmp, 0.0, -(-repeats // lanes) * lanes)
        count = repeats


def _combine_partials(ctx, t: SplitTiling, y, unit: int, acc, tmp, slot: int,
                      lanes: int) -> None:
    """A row's first core, after the SyncAll: the row's partials back into UB, combined,
    written out."""
    chip = ctx.chip
    cores = t.per_unit
    per_repeat = lanes // slot                           # partials (32-byte slots) per repeat
    repeats = -(-cores // per_repeat)
    asc.duplicate(acc, t.identity, repeats * lanes)      # slots past the last core: identity
    asc.set_flag(asc.HardEvent.V_MTE2, EVENT)
    asc.wait_flag(asc.HardEvent.V_MTE2, EVENT)
    asc.data_copy(acc, ctx.workspace.reinterpret(F32)[unit * cores * slot], cores * slot)
    asc.set_flag(asc.HardEvent.MTE2_V, EVENT)
    asc.wait_flag(asc.HardEvent.MTE2_V, EVENT)
    # one partial at the start of each 32-byte slot: a bitwise mask takes lane 0 of each block
    first_lanes = sum(1 << (k * slot) for k in range(per_repeat))
    asc.duplicate(tmp, t.identity, lanes)
    WHOLE[t.kind](tmp, acc, [first_lanes, 0], repeats)
    _to_one(tmp, acc, lanes, t.kind, t.identity, lanes, chip)
    out_dtype = to_numpy(t.dtype)
    result = tmp
    if out_dtype != F32:
        result = acc.reinterpret(out_dtype)
        asc.cast(result, tmp, asc.RoundMode.CAST_RINT, 1)
    asc.set_flag(asc.HardEvent.V_MTE3, EVENT)
    asc.wait_flag(asc.HardEvent.V_MTE3, EVENT)
    asc.data_copy_pad(y, result, asc.DataCopyExtParams(1, out_dtype.itemsize, 0, 0))
