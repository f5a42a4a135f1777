"""A reduction to a single value, split across cores: the cross-core combination.

Each core reduces its contiguous range of the input to one float32 partial (accumulating in
float32 whatever the input type, R13) and writes it to its own 32-byte slot of a GM workspace;
all cores meet at a SyncAll; core 0 reads the partials back, combines them in float32 and
writes the output. The axis template keeps every output unit on one core, so this is the path
the host tiling picks when the whole input reduces to one value and is larger than a tile.
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
    total: int          # input elements
    per_core: int
    tile: int           # input elements per tile
    kind: str           # sum, max or min
    mean: bool
    identity: float
    dtype: str          # input (and output) dtype


def split_plan(x: TensorDesc, kind: str, mean: bool, identity: float, chip: ChipSpec,
               config: dict | None = None) -> LaunchPlan | None:
    """The split plan, or None when the input fits in one tile (one core is then enough)."""
    config = config or {}
    buffers = int(config.get("buffer_num", 2))
    # per element: the queued input, plus a float32 copy and the float32 accumulator
    tile = tile_elements(chip, queued_bytes=x.itemsize, buffer_num=buffers,
                         scratch_bytes=2 * F32.itemsize, vector_itemsize=F32.itemsize)
    if x.size <= tile:
        return None
    block_dim, per_core = split_cores(x.size, chip, x.itemsize, config.get("block_dim"))
    return LaunchPlan(block_dim, SplitTiling(x.size, per_core, tile, kind, mean, identity,
                                             x.dtype), block_dim * chip.block_bytes)


def split_kernel(ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor):
    """The device side (a generator: it meets the other cores at a SyncAll)."""
    t: SplitTiling = ctx.tiling
    chip = ctx.chip
    dtype = to_numpy(t.dtype)
    lanes = chip.lanes(F32.itemsize)
    start = ctx.block_idx * t.per_core
    length = min(t.per_core, t.total - start)
    src = x.window(start, length)

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
        asc.muls(acc, acc, 1.0 / t.total, 1)
    slot = chip.block_elems(F32.itemsize)
    asc.set_flag(asc.HardEvent.V_MTE3, EVENT)
    asc.wait_flag(asc.HardEvent.V_MTE3, EVENT)
    asc.data_copy(ctx.workspace.reinterpret(F32)[ctx.block_idx * slot], acc, slot)
    yield asc.sync_all()
    if ctx.block_idx == 0:
        _combine_partials(ctx, t, y, acc, wide, slot, lanes)


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


def _combine_partials(ctx, t: SplitTiling, y, acc, tmp, slot: int, lanes: int) -> None:
    """Core 0, after the SyncAll: the partials back into UB, combined, written out."""
    chip = ctx.chip
    cores = ctx.block_num
    per_repeat = lanes // slot                           # partials (32-byte slots) per repeat
    repeats = -(-cores // per_repeat)
    asc.duplicate(acc, t.identity, repeats * lanes)      # slots past the last core: identity
    asc.set_flag(asc.HardEvent.V_MTE2, EVENT)
    asc.wait_flag(asc.HardEvent.V_MTE2, EVENT)
    asc.data_copy(acc, ctx.workspace.reinterpret(F32), cores * slot)
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
