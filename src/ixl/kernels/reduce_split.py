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

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..ascend import lang as asc
from ..ascend.chips import ChipSpec
from ..hixl.dtypes import to_numpy
from ..intmath import ceil_div, round_up
from ..nixl import KernelContext, LaunchPlan, TensorDesc
from ..nixl.tuning import DoesNotFit, TuningConfig
from .reducers import MAPS, REDUCERS
from .tiling import Tiling, split_cores, tile_elements

F32 = np.dtype(np.float32)
EVENT = 7      # the event id of the hand-placed flags: the plan keeps the queue's slots below it


# ---------------------------------------------------------------- tiling data

@dataclass(frozen=True)
class SplitTiling(Tiling):
    units: int          # output values (rows of the input)
    length: int         # elements reduced into each
    per_unit: int       # cores working on one row
    chunk: int          # elements of a row per core
    tile: int           # input elements per tile
    kind: str           # sum, max or min (a key of REDUCERS)
    mean: bool
    dtype: str          # input (and output) dtype
    config: TuningConfig   # buffer_num: slots of the input queue
    pre: str = ""       # a map of MAPS applied to each element first ("": none)
    post: str = ""      # ... and to the result


# ---------------------------------------------------------------- host tiling

def split_plan(x: TensorDesc, units: int, kind: str, mean: bool, chip: ChipSpec,
               config: TuningConfig | None = None, pre: str = "",
               post: str = "") -> LaunchPlan | None:
    """The split plan for `units` rows, or None when one core per row is enough (many rows,
    or rows that fit in one tile), or when the config asks for float16 accumulation of float16
    (the axis kernel shows that pitfall; this one always accumulates in float32). `pre` and
    `post` name maps (reducers.MAPS) applied to each element first and to the result last."""
    config = config or TuningConfig()
    # per element: the queued input, plus a float32 copy and the float32 accumulator
    largest = tile_elements(chip, queued_bytes=x.itemsize, buffer_num=config.buffers,
                            scratch_bytes=2 * F32.itemsize, vector_itemsize=F32.itemsize)
    cores = config.cores(chip)
    length = x.size // units if units else 0
    if not units or units * 2 > cores or length <= largest \
            or (config.accumulate == "float16" and x.dtype == "float16"):
        return None
    if config.buffers > EVENT:
        raise DoesNotFit(f"the split reduction's input queue takes event ids 0 .. "
                         f"{config.buffers - 1}, and its own flags id {EVENT}: at most {EVENT} "
                         f"buffers")
    lanes = chip.lanes(F32.itemsize)
    tile = max(lanes, largest // config.divisor // lanes * lanes)
    per_unit = cores // units
    _, chunk = split_cores(length, chip, x.itemsize, per_unit)
    per_unit = ceil_div(length, chunk)
    block_dim = units * per_unit
    tiling = SplitTiling(units, length, per_unit, chunk, tile, kind, mean, x.dtype, config,
                         pre, post)
    return LaunchPlan(block_dim, tiling, block_dim * chip.block_bytes)


# ---------------------------------------------------------------- the device kernel

class SplitReduceKernel:
    """One core's chunk of a row: its float32 partial, then (a row's first core) the row's
    combination."""

    def __init__(self, ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> None:
        """Init: the chunk's window, an input queue, a float32 accumulator and copy."""
        tiling: SplitTiling = ctx.tiling
        self.ctx, self.tiling, self.chip, self.y = ctx, tiling, ctx.chip, y
        self.reducer = REDUCERS[tiling.kind]
        self.dtype = to_numpy(tiling.dtype)
        self.lanes = self.chip.lanes(F32.itemsize)
        self.unit, self.part = divmod(ctx.block_idx, tiling.per_unit)
        start = self.part * tiling.chunk
        self.length = min(tiling.chunk, tiling.length - start)
        self.src = x.window(self.unit * tiling.length + start, self.length)
        pipe = asc.TPipe()
        self.in_q = asc.TQue(asc.TPosition.VECIN)
        pipe.init_buffer(self.in_q, tiling.config.buffers, tiling.tile * self.dtype.itemsize)
        acc_buf, wide_buf = asc.TBuf(), asc.TBuf()
        pipe.init_buffer(acc_buf, tiling.tile * F32.itemsize)
        pipe.init_buffer(wide_buf, tiling.tile * F32.itemsize)
        self.acc, self.wide = acc_buf.get(F32), wide_buf.get(F32)

    def process(self) -> Iterator[object]:
        """A generator: it meets the other cores at a SyncAll."""
        tiling = self.tiling
        asc.duplicate(self.acc, self.reducer.identity, tiling.tile)
        for offset in range(0, self.length, tiling.tile):
            count = min(tiling.tile, self.length - offset)
            self.copy_in(offset, count)
            self.compute(count)
        self.copy_out_partial()
        yield asc.sync_all()
        if self.part == 0:
            self.combine_partials()

    def copy_in(self, offset: int, count: int) -> None:
        x = self.in_q.alloc_tensor(self.dtype)
        asc.data_copy_pad(x, self.src[offset],
                          asc.DataCopyExtParams(1, count * self.dtype.itemsize, 0, 0))
        self.in_q.enque(x)

    def compute(self, count: int) -> None:
        """Fold the tile into the accumulator, in float32."""
        x = self.in_q.deque()
        wide = x
        if self.dtype != F32:
            asc.cast(self.wide, x, asc.RoundMode.CAST_NONE, count)
            wide = self.wide
        if self.tiling.pre:
            MAPS[self.tiling.pre](wide, wide, count)
        self.reducer.combine(self.acc, self.acc, wide, count)
        self.in_q.free_tensor(x)

    def copy_out_partial(self) -> None:
        """The chunk's partial (the mean's share of it) into this core's workspace slot."""
        self._to_one(self.acc, self.wide, self.tiling.tile)
        if self.tiling.mean:
            asc.muls(self.acc, self.acc, 1.0 / self.tiling.length, 1)
        slot = self.chip.block_elems(F32.itemsize)
        asc.set_flag(asc.HardEvent.V_MTE3, EVENT)
        asc.wait_flag(asc.HardEvent.V_MTE3, EVENT)
        partials = self.ctx.planned_workspace.reinterpret(F32)
        asc.data_copy(partials[self.ctx.block_idx * slot], self.acc, slot)

    def _to_one(self, acc, tmp, count: int) -> None:
        """Reduce `count` float32 values in acc to acc[0], a whole repeat at a time."""
        lanes, identity, whole = self.lanes, self.reducer.identity, self.reducer.whole
        assert whole is not None                    # plan() declines a reduction without one
        limit = self.chip.max_repeat // 8 * 8       # chunks start on 32-byte boundaries
        while count > 1:
            repeats = ceil_div(count, lanes)
            asc.duplicate(tmp, identity, round_up(repeats, lanes))
            for first in range(0, repeats, limit):
                whole(tmp[first], acc[first * lanes], lanes,
                                   min(limit, repeats - first))
            asc.adds(acc, tmp, 0.0, round_up(repeats, lanes))
            count = repeats

    def combine_partials(self) -> None:
        """A row's first core, after the SyncAll: the row's partials back into UB, combined,
        written out."""
        tiling, acc, tmp, lanes = self.tiling, self.acc, self.wide, self.lanes
        identity, whole = self.reducer.identity, self.reducer.whole
        assert whole is not None                    # plan() declines a reduction without one
        slot = self.chip.block_elems(F32.itemsize)
        cores = tiling.per_unit
        per_repeat = lanes // slot                       # partials (32-byte slots) per repeat
        repeats = ceil_div(cores, per_repeat)
        asc.duplicate(acc, identity, repeats * lanes)    # slots past the last core: identity
        asc.set_flag(asc.HardEvent.V_MTE2, EVENT)
        asc.wait_flag(asc.HardEvent.V_MTE2, EVENT)
        asc.data_copy(acc, self.ctx.planned_workspace.reinterpret(F32)[self.unit * cores * slot],
                      cores * slot)
        asc.set_flag(asc.HardEvent.MTE2_V, EVENT)
        asc.wait_flag(asc.HardEvent.MTE2_V, EVENT)
        # one partial at the start of each 32-byte slot: a bitwise mask takes lane 0 of each block
        first_lanes = sum(1 << (k * slot) for k in range(per_repeat))
        asc.duplicate(tmp, identity, lanes)
        whole(tmp, acc, [first_lanes, 0], repeats)
        self._to_one(tmp, acc, lanes)
        if tiling.post:
            MAPS[tiling.post](tmp, tmp, 1)
        result = tmp
        if self.dtype != F32:
            result = acc.reinterpret(self.dtype)
            asc.cast(result, tmp, asc.RoundMode.CAST_RINT, 1)
        asc.set_flag(asc.HardEvent.V_MTE3, EVENT)
        asc.wait_flag(asc.HardEvent.V_MTE3, EVENT)
        asc.data_copy_pad(self.y[self.unit], result,
                          asc.DataCopyExtParams(1, self.dtype.itemsize, 0, 0))


def split_kernel(ctx: KernelContext, x: asc.GlobalTensor, y: asc.GlobalTensor) -> Iterator[object]:
    """The device kernel's entry for a split plan (a generator: see SplitReduceKernel)."""
    return SplitReduceKernel(ctx, x, y).process()
