"""The model's speed of light for a memory-bound kernel: the modeled time of the best pure copy
kernel that reads and writes the same bytes (every core, large double-buffered tiles, moves
only), run on a timing-only device like any kernel. A kernel at 100% of it is as fast as the
modeled chip can move its data."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..ascend import lang as asc
from ..intmath import ceil_div, round_up
from ..nixl import RUNTIME_VERSION, Device, KernelContext, KernelEntry, LaunchPlan


@dataclass(frozen=True)
class CopyTiling:
    reads: int            # bytes each core reads
    writes: int           # bytes each core writes
    tile: int             # bytes per tile


def copy_kernel(ctx: KernelContext, src: asc.GlobalTensor, dst: asc.GlobalTensor) -> None:
    """Each core reads its `reads` bytes and writes its `writes` bytes, tile by tile, the
    writes spread evenly over the reads (as a kernel writes its outputs along: written early,
    more of them would leave L2 during the launch), double buffered, moves only."""
    t: CopyTiling = ctx.tiling
    r0, w0 = ctx.block_idx * t.reads, ctx.block_idx * t.writes
    r_len = max(0, min(t.reads, src.count - r0))
    w_len = max(0, min(t.writes, dst.count - w0))
    n_reads, n_writes = ceil_div(r_len, t.tile), ceil_div(w_len, t.tile)
    steps = max(n_reads, n_writes)
    pipe = asc.TPipe()
    q = asc.TQue(asc.TPosition.VECIN)
    pipe.init_buffer(q, 2, t.tile)
    written = 0
    for step in range(steps):
        off = step * t.tile
        x = q.alloc_tensor(np.uint8)
        if off < r_len:
            asc.data_copy_pad(x, src[r0 + off],
                              asc.DataCopyExtParams(1, min(t.tile, r_len - off), 0, 0))
        q.enque(x)
        x = q.deque()
        while written < n_writes and written * steps < (step + 1) * n_writes:
            w_off = written * t.tile
            asc.data_copy_pad(dst[w0 + w_off], x,
                              asc.DataCopyExtParams(1, min(t.tile, w_len - w_off), 0, 0))
            written += 1
        q.free_tensor(x)


def _plan(read_bytes: int, write_bytes: int):
    def plan(ins, outs, attrs, chip, config) -> LaunchPlan:
        cores, align = chip.aiv_cores, chip.gm_alloc_align
        reads = round_up(ceil_div(read_bytes, cores), align)
        writes = round_up(ceil_div(write_bytes, cores), align)
        blocks = max(ceil_div(read_bytes, reads) if reads else 0,
                     ceil_div(write_bytes, writes) if writes else 0)
        tile = chip.ub_bytes // 2 // align * align
        return LaunchPlan(max(blocks, 1), CopyTiling(reads, writes, tile))
    return plan


@lru_cache(maxsize=64)
def speed_of_light_us(chip_name: str, read_bytes: int, write_bytes: int) -> float:
    """Modeled time of the copy kernel moving `read_bytes` in and `write_bytes` out."""
    entry = KernelEntry(op="copy", kernel=copy_kernel, tiling=_plan(read_bytes, write_bytes),
                        dtypes=("uint8",), built_for_runtime=RUNTIME_VERSION,
                        arg_names=("src", "dst"))
    with Device(chip_name, timing_only=True, debug=False) as dev:
        src = dev.empty((max(read_bytes, 1),), "uint8", "src")
        dst = dev.empty((max(write_bytes, 1),), "uint8", "dst")
        try:
            return dev.launch(entry, [src], [dst]).time_us
        finally:
            src.free()
            dst.free()
